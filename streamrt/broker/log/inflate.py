"""Bounded decompression of a batch's records section (the compression-bomb guard).

A client's 34 KiB of zstd can claim to hold a gigabyte. Each codec here is driven as a stream
that never produces more than ``limit + 1`` bytes in all: past ``limit`` the batch is refused
with RECORD_LIST_TOO_LARGE before the rest is inflated, so memory and CPU spent on one batch
are bounded by ``limit`` whatever the input says. Codecs as Kafka writes them: gzip, snappy
(xerial framing or a raw block), lz4 (frame format, KIP-57) and zstd.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable

import cramjam
import lz4.frame
import zstandard

from streamrt.errors import ErrorCode, KafkaError

__all__ = ("inflate",)

_CHUNK = 1 << 16
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16
_GZIP_WBITS = 16 + zlib.MAX_WBITS
#: A zstd frame may ask for a window of up to 2 GiB; producers' frames use a few MiB.
_ZSTD_MAX_WINDOW = 1 << 24


class _Sink:
    """Collects output and refuses the batch as soon as it passes ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.parts: list[bytes] = []

    @property
    def room(self) -> int:
        """Bytes still allowed, plus one so that passing the limit is seen."""
        return self.limit - self.size + 1

    def add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise KafkaError(
                ErrorCode.record_list_too_large,
                f"compressed records inflate past {self.limit} bytes",
            )
        self.parts.append(data)

    def join(self) -> bytes:
        return b"".join(self.parts)


def _gzip(data: bytes, sink: _Sink) -> None:
    while data:  # concatenated gzip members are one stream, as Java's GZIPInputStream reads
        d = zlib.decompressobj(_GZIP_WBITS)
        pending = data
        while pending and not d.eof:
            sink.add(d.decompress(pending, min(sink.room, _CHUNK)))
            pending = d.unconsumed_tail
        while not d.eof and not pending:
            out = d.decompress(b"", min(sink.room, _CHUNK))
            if not out:
                raise KafkaError(ErrorCode.corrupt_message, "truncated gzip stream")
            sink.add(out)
        data = d.unused_data


def _zstd(data: bytes, sink: _Sink) -> None:
    """A truncated frame reads as short output, not an error: the record walk that follows
    then finds fewer records than the header declares (INVALID_RECORD)."""
    reader = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW).stream_reader(
        io.BytesIO(data), read_across_frames=True
    )
    while out := reader.read(min(sink.room, _CHUNK)):
        sink.add(out)


def _lz4(data: bytes, sink: _Sink) -> None:
    d = lz4.frame.LZ4FrameDecompressor()
    sink.add(d.decompress(data, max_length=min(sink.room, _CHUNK)))
    while not d.eof:
        out = d.decompress(b"", max_length=min(sink.room, _CHUNK))
        if not out:
            raise KafkaError(ErrorCode.corrupt_message, "truncated lz4 frame")
        sink.add(out)


def _snappy_block(block: bytes, sink: _Sink) -> None:
    """A raw snappy block starts with its uncompressed length (a varint): checked first."""
    length, shift, pos = 0, 0, 0
    while True:
        if pos >= len(block) or shift > 28:
            raise KafkaError(ErrorCode.corrupt_message, "bad snappy block length")
        byte = block[pos]
        length |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            break
    if length >= sink.room:
        raise KafkaError(
            ErrorCode.record_list_too_large,
            f"compressed records inflate past {sink.limit} bytes",
        )
    sink.add(bytes(cramjam.snappy.decompress_raw(block)))


def _snappy(data: bytes, sink: _Sink) -> None:
    if not data.startswith(_XERIAL_MAGIC):
        _snappy_block(data, sink)
        return
    pos = _XERIAL_HEADER
    while pos < len(data):
        if pos + 4 > len(data):
            raise KafkaError(ErrorCode.corrupt_message, "truncated xerial snappy block")
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            raise KafkaError(ErrorCode.corrupt_message, "bad xerial snappy block size")
        _snappy_block(data[pos + 4 : pos + 4 + size], sink)
        pos += 4 + size


_CODECS: dict[int, Callable[[bytes, _Sink], None]] = {
    1: _gzip,
    2: _snappy,
    3: _lz4,
    4: _zstd,
}


def inflate(codec: int, data: bytes, limit: int) -> bytes:
    """``data`` decompressed with batch codec ``codec`` (0 = none), at most ``limit`` bytes.

    RECORD_LIST_TOO_LARGE past ``limit``; CORRUPT_MESSAGE for a stream the codec rejects;
    UNSUPPORTED_COMPRESSION_TYPE for a codec id Kafka does not define.
    """
    if codec == 0:
        return data
    run = _CODECS.get(codec)
    if run is None:
        raise KafkaError(ErrorCode.unsupported_compression_type, f"unknown codec id {codec}")
    sink = _Sink(limit)
    try:
        run(data, sink)
    except KafkaError:
        raise
    except Exception as exc:  # zlib.error, zstandard.ZstdError, RuntimeError (lz4), cramjam
        raise KafkaError(ErrorCode.corrupt_message, f"cannot decompress records: {exc}") from None
    return sink.join()
