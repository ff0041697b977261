"""error_response: an error answer mirrors the request's items in every version it serves."""

from __future__ import annotations

from kio.serial import entity_reader

from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for, encode_response
from streamrt.wire.context import RequestContext
from streamrt.wire.error_responses import error_response


def test_create_topics_v7_errors_answer_every_topic_instead_of_closing() -> None:
    # v7 added a required topic_id to each result; the builder once left it out, so the
    # broker had no answer and closed the client's connection (Kafka answers with the error)
    codec = codec_for(ApiKey.CREATE_TOPICS, 7)
    topic = {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": []}
    request = build(
        codec.request_cls,
        topics=[{**topic, "configs": []}, {**topic, "name": "u", "configs": []}],
        timeout=1000,
        validate_only=False,
    )
    ctx = RequestContext(ApiKey.CREATE_TOPICS, 7, 1, "client", "/127.0.0.1")
    response = error_response(ctx, request, ErrorCode.not_controller, "moved")
    assert response is not None
    frame = b"".join(encode_response(codec, 1, response))
    _header, offset = entity_reader(codec.response_cls.__header_schema__)(frame, 0)  # type: ignore[attr-defined]
    decoded, _size = entity_reader(codec.response_cls)(frame, offset)
    assert [(t.name, t.error_code, t.error_message) for t in decoded.topics] == [
        ("t", ErrorCode.not_controller, "moved"),
        ("u", ErrorCode.not_controller, "moved"),
    ]
