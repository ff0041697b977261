"""A Protobuf message type built at run time (no protoc): ``streamrt.test.Click``."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_FILE = descriptor_pb2.FileDescriptorProto(
    name="streamrt_test_click.proto", package="streamrt.test", syntax="proto3"
)
_MSG = _FILE.message_type.add(name="Click")
_MSG.field.add(name="user", number=1, type=9, label=1)  # TYPE_STRING, LABEL_OPTIONAL
_MSG.field.add(name="n", number=2, type=3, label=1)  # TYPE_INT64

_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_FILE)
Click = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("streamrt.test.Click"))
