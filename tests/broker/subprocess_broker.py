"""A real broker in a child process (``streamrt broker``), for frames that could abort the
process that decodes them: the test sees a dead child instead of losing pytest itself. Its
address space is capped (``RLIMIT_AS``) so an allocation sized by a lying length fails the
same way on every machine instead of slipping through Linux's overcommit on a big one."""

from __future__ import annotations

import contextlib
import resource
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kio.serial import entity_reader

from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import codec_for

#: far above what the broker needs (its address space peaks near 300 MiB, measured), far below a
#: length-sized allocation (tens of GiB)
ADDRESS_SPACE = 4 << 30
_BROKER = (sys.executable, "-m", "streamrt.cli", "broker")


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


class ChildBroker:
    """A ``streamrt broker --port 0`` child process and its address."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log = data_dir / "broker.log"  # a file, not a pipe: thousands of warnings fit
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [*_BROKER, "--port", "0", "--data-dir", str(data_dir / "data")],
                stdout=subprocess.PIPE,
                stderr=log,
                preexec_fn=_cap_memory,
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        assert "listening on" in line, line + self.log_tail()
        self.host, port = line.rsplit(" ", 1)[1].strip().rsplit(":", 1)
        self.port = int(port)

    def log_tail(self) -> str:
        return self.log.read_bytes()[-3000:].decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(20)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def connect(self) -> socket.socket:
        return socket.create_connection((self.host, self.port), timeout=30)

    def send_bad(self, frame: bytes, wait: float = 30) -> None:
        """Send one size-prefixed request and wait (at most ``wait`` s: a valid long-polling
        request may be parked) for its answer or for the broker to close the connection (a
        reset or a dead child count as closed; liveness is checked apart)."""
        with self.connect() as s:
            s.settimeout(wait)
            try:
                s.sendall(len(frame).to_bytes(4, "big") + frame)
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
            except OSError:
                pass

    def served(self) -> list[tuple[int, int]]:
        """Every (api_key, version) the broker advertises in ApiVersions."""
        keys = self._api_versions().api_keys
        return [(k.api_key, v) for k in keys for v in range(k.min_version, k.max_version + 1)]

    def _api_versions(self) -> object:
        body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 7, 5) + b"probe"
        with self.connect() as s:
            s.sendall(len(body).to_bytes(4, "big") + body)
            size = int.from_bytes(_recv_exactly(s, 4), "big")
            frame = _recv_exactly(s, size)
        assert frame[:4] == (7).to_bytes(4, "big")
        response, _ = entity_reader(codec_for(ApiKey.API_VERSIONS, 0).response_cls)(frame, 4)
        return response

    def assert_alive(self, after: str = "") -> None:
        """The child still runs and answers ApiVersions on a new connection."""
        try:
            answer = self._api_versions()
        except OSError:
            answer = None
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)  # a dead child closes its sockets just before it exits
        code = self.proc.poll()
        assert code is None, f"broker died (exit {code}) after {after}:\n{self.log_tail()}"
        assert answer is not None, f"broker runs but did not answer after {after}"
        assert answer.error_code == 0  # type: ignore[attr-defined]


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    data = s.recv(n, socket.MSG_WAITALL)
    if len(data) < n:
        raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
    return data


@contextmanager
def child_broker(data_dir: Path) -> Iterator[ChildBroker]:
    broker = ChildBroker(data_dir)
    try:
        yield broker
    finally:
        broker.stop()


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint (any size: the point is to send lying ones)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def request_header(api_key: int, version: int, client_id: bytes, flexible: bool) -> bytes:
    """Request header v1 (or v2 with an empty tag section when ``flexible``)."""
    head = struct.pack(">hhih", api_key, version, 1, len(client_id)) + client_id
    return head + b"\x00" if flexible else head
