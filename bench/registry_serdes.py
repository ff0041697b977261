"""Per-record cost of the registry serdes against the JSON serde, in one process.

Starts Apicurio Registry (``streamrt dev registry``'s class), warms each serde with one record
(the schema registered, its id cached), then times ``serialize`` + ``deserialize`` of a click
(``{"user", "page", "ts"}``) N times per format. The registry is asked nothing while timing
(its access log is checked). Prints records/s per format.

    .venv/bin/python bench/registry_serdes.py --records 50000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from apps.avro_sessions import CLICK_V1
from streamrt.dev.apicurio import ApicurioRegistry
from streamrt.schema_registry import AvroSerde, JsonSchemaSerde, ProtobufSerde
from streamrt.serde import JsonSerde, bind_serde

JSON_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "user": {"type": "string"},
            "page": {"type": "string"},
            "ts": {"type": "integer"},
        },
        "required": ["user", "page", "ts"],
    }
)


def click_message_type() -> Any:
    """``bench.Click`` built at run time (no protoc)."""
    file = descriptor_pb2.FileDescriptorProto(name="bench_click.proto", package="bench")
    file.syntax = "proto3"
    msg = file.message_type.add(name="Click")
    for number, (name, kind) in enumerate((("user", 9), ("page", 9), ("ts", 3)), 1):
        msg.field.add(name=name, number=number, type=kind, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Click"))


def rate(serde: Any, value: Any, n: int) -> float:
    serde.deserialize(serde.serialize(value))  # warm: register, cache the id
    start = time.perf_counter()
    for _ in range(n):
        serde.deserialize(serde.serialize(value))
    return n / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    args = parser.parse_args()
    registry = ApicurioRegistry(Path(tempfile.mkdtemp(prefix="bench-registry-"))).start()
    try:
        conf = {"schema.registry.url": registry.url}
        click = {"user": "user-42", "page": "/products/17", "ts": 1_700_000_000_000}
        proto = click_message_type()
        cases = [
            ("json (no registry)", JsonSerde(), click),
            ("avro", AvroSerde(conf, CLICK_V1), click),
            ("json schema", JsonSchemaSerde(conf, JSON_SCHEMA), click),
            ("protobuf", ProtobufSerde(conf, proto), proto(**click)),
        ]
        for name, serde, value in cases:
            topic = "bench-" + name.split(" ")[0].replace("json", "json-schema")
            bound = bind_serde(serde, topic, is_key=False)  # one subject per format
            bound.deserialize(bound.serialize(value))
            before = registry.requests_served()
            per_s = rate(bound, value, args.records)
            calls = registry.requests_served() - before
            print(f"{name:20s} {per_s:>10,.0f} round trips/s  registry requests: {calls}")
    finally:
        registry.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
