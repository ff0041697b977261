from datetime import UTC, datetime

import confluent_kafka as ck
from pyspark.sql.pandas.types import to_arrow_schema

from streamrt.spark.arrow import RECORD_ARROW_SCHEMA, RECORD_SCHEMA, batch_from_messages


def test_arrow_schema_is_exactly_what_spark_expects() -> None:
    # Spark compares a yielded RecordBatch's schema with this, nullability included.
    assert to_arrow_schema(RECORD_SCHEMA, timezone="UTC").equals(RECORD_ARROW_SCHEMA)


def test_batch_from_confluent_messages() -> None:
    messages = [
        ck.Message(
            topic="t", partition=2, offset=7, key=b"k", value=b"v",
            headers=[("h", b"x"), ("n", None)], timestamp=(ck.TIMESTAMP_CREATE_TIME, 1500),
        ),
        ck.Message(
            topic="t", partition=2, offset=8, key=None, value=None,
            headers=None, timestamp=(ck.TIMESTAMP_LOG_APPEND_TIME, 2000),
        ),
        ck.Message(topic="t", partition=2, offset=9, value=b"", timestamp=(0, -1)),
    ]  # fmt: skip
    batch = batch_from_messages("t", 2, messages)
    assert batch.schema.equals(RECORD_ARROW_SCHEMA)
    rows = batch.to_pylist()
    assert rows[0] == {
        "key": b"k",
        "value": b"v",
        "topic": "t",
        "partition": 2,
        "offset": 7,
        "timestamp": datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=UTC),
        "timestampType": 0,
        "headers": [{"key": "h", "value": b"x"}, {"key": "n", "value": None}],
    }
    assert (rows[1]["key"], rows[1]["value"], rows[1]["timestampType"]) == (None, None, 1)
    assert rows[1]["headers"] is None
    assert (rows[2]["timestamp"], rows[2]["timestampType"]) == (None, -1)


def test_empty_batch_still_matches_schema() -> None:
    assert batch_from_messages("t", 0, []).schema.equals(RECORD_ARROW_SCHEMA)
