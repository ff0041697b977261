"""Tagged fields the broker's schema does not know are ignored, as Kafka ignores them: in the
request header, at the end of the body and inside a nested struct. A frame that is broken,
not merely newer, still closes its connection."""

from __future__ import annotations

import socket
import uuid

from streamrt.broker.embedded import BrokerThread
from streamrt.wire.client_codec import client_codec
from streamrt.wire.codec import build

METADATA = 3
UNKNOWN = b"\x01\x63\x02ab"  # one tagged field: tag 99, 2 bytes


def _frame(topic: str) -> bytes:
    """Metadata v12 for one topic, without the 4-byte size prefix."""
    codec = client_codec(METADATA, 12)
    request = build(
        codec.request_cls,
        topics=[{"name": topic, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return codec.encode_request(5, "tags", request)[4:]


def _send(bootstrap: str, frame: bytes) -> bytes | None:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        head = s.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        return s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)


def _with_tags(frame: bytes, topic: str) -> bytes:
    header_end = 8 + 2 + len("tags")  # api key, version, correlation id, client id
    assert frame[header_end] == 0  # the header's empty tag section
    frame = frame[:header_end] + UNKNOWN + frame[header_end + 1 :]
    name = bytes([len(topic) + 1]) + topic.encode() + b"\x00"  # the topic struct's end
    assert frame.count(name) == 1
    frame = frame.replace(name, name[:-1] + UNKNOWN)
    assert frame.endswith(b"\x00")  # the body's own tag section
    return frame[:-1] + UNKNOWN


def _decoded(payload: bytes) -> object:
    return client_codec(METADATA, 12).decode_response(payload)


def test_unknown_tagged_fields_are_ignored(broker: BrokerThread) -> None:
    plain = _send(broker.bootstrap, _frame("tagged-topic"))
    tagged = _send(broker.bootstrap, _with_tags(_frame("tagged-topic"), "tagged-topic"))
    assert plain is not None and tagged is not None
    assert _decoded(tagged) == _decoded(plain)
    assert _decoded(tagged).topics[0].name == "tagged-topic"  # type: ignore[attr-defined]


def test_a_truncated_tag_still_closes_the_connection(broker: BrokerThread) -> None:
    frame = _with_tags(_frame("tagged-topic"), "tagged-topic")
    assert _send(broker.bootstrap, frame[:-1]) is None
    assert _send(broker.bootstrap, _frame("tagged-topic")) is not None
