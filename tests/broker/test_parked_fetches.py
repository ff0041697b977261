"""Bounded parked work: long-poll fetches on closed connections are dropped, a produce wakes
only the fetches of its partitions, and fetch waits are capped (``streamrt.fetch.wait.max.ms``).

Raw sockets send the fetches (a client that sends a long poll and hangs up is the attack);
the broker is in-process, so its open descriptors are this process's ``/proc/self/fd``."""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Callable

from streamrt.broker.embedded import BrokerThread
from streamrt.wire.api_keys import ApiKey
from tests.broker.batches import batch
from tests.broker.raw_fetch import fetch_frame, send_and_close
from tests.broker.raw_produce import RawProducer
from tests.kafka_helpers import create_topic, wait_until

# Waits far longer than any test: only a closed connection can release these fetches.
_NO_CAP = {"streamrt.fetch.wait.max.ms": "600000"}


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def _parked(b: BrokerThread) -> float | None:
    """The broker's ``streamrt_broker_parked_fetches`` gauge."""
    return b.broker.metrics.registry.get_sample_value("streamrt_broker_parked_fetches")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _answered(s: socket.socket) -> bytes:
    """The payload of the next answer on ``s`` (fails if the broker closes instead)."""
    head = s.recv(4, socket.MSG_WAITALL)
    assert len(head) == 4, "broker closed the connection instead of answering"
    return s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)


def test_closing_connections_drops_their_parked_fetches(
    broker_factory: Callable[..., BrokerThread], topic_name: str
) -> None:
    """500 connections park a fetch each (24-day max_wait, 2 GiB min_bytes), then all close:
    every parked fetch is dropped, and the broker still answers a produce."""
    b = broker_factory(_NO_CAP)
    create_topic(b.bootstrap, topic_name)
    frame = fetch_frame(topic_name)
    sockets = []
    try:
        for _ in range(500):
            s = _connect(b.bootstrap)
            s.sendall(frame)
            sockets.append(s)
        wait_until(lambda: _parked(b) == 500, 60, "500 parked fetches")
    finally:
        for s in sockets:
            s.close()
    wait_until(lambda: _parked(b) == 0, 60, "no parked fetch after the clients closed")
    with RawProducer(b.bootstrap) as producer:
        assert producer.produce(topic_name, 0, bytes(batch([b"v"])))[0] == 0


def test_send_and_close_flood_leaks_no_descriptors(
    broker_factory: Callable[..., BrokerThread], topic_name: str
) -> None:
    """2,000 connections that each send a long-wait fetch and close at once: the broker's
    (this process's) open descriptors come back to where they were."""
    b = broker_factory(_NO_CAP)
    create_topic(b.bootstrap, topic_name)
    frame = fetch_frame(topic_name)
    with RawProducer(b.bootstrap) as producer:  # warm: log files and a connection opened
        assert producer.produce(topic_name, 0, bytes(batch([b"v"])))[0] == 0
    start = _open_fds()
    for _ in range(2000):
        send_and_close(b.bootstrap, frame)
    wait_until(lambda: _open_fds() <= start + 10, 90, f"open descriptors back near {start}")
    assert _parked(b) == 0


def test_produce_wakes_only_fetches_parked_on_its_partitions(
    broker_factory: Callable[..., BrokerThread], topic_name: str
) -> None:
    """A fetch parked on partition 1 is not woken by produces to partition 0, and is answered
    by the first produce to partition 1."""
    b = broker_factory(_NO_CAP)
    create_topic(b.bootstrap, topic_name, partitions=2)
    waiting = _connect(b.bootstrap)
    try:
        waiting.sendall(fetch_frame(topic_name, 1, min_bytes=1))
        wait_until(lambda: _parked(b) == 1, 60, "the fetch parked")
        woken = b.broker.core.data_arrived.woken()
        with RawProducer(b.bootstrap) as producer:
            for i in range(20):
                assert producer.produce(topic_name, 0, bytes(batch([b"%d" % i])))[0] == 0
            assert b.broker.core.data_arrived.woken() == woken
            assert _parked(b) == 1
            assert producer.produce(topic_name, 1, bytes(batch([b"for-1"])))[0] == 0
        assert b"for-1" in _answered(waiting)
        assert b.broker.core.data_arrived.woken() == woken + 1
    finally:
        waiting.close()


def test_fetch_wait_is_capped_by_streamrt_fetch_wait_max_ms(
    broker_factory: Callable[..., BrokerThread], topic_name: str
) -> None:
    """A fetch asking to wait 24 days is answered (empty) once the broker's cap has passed;
    a request pipelined behind it (read while the fetch was parked) is answered next."""
    b = broker_factory({"streamrt.fetch.wait.max.ms": "200"})
    create_topic(b.bootstrap, topic_name)
    api_versions = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, 7, 1) + b"x"
    with _connect(b.bootstrap) as s:
        s.sendall(fetch_frame(topic_name) + len(api_versions).to_bytes(4, "big") + api_versions)
        started = time.monotonic()
        s.settimeout(60)
        fetched = _answered(s)  # a timeout here means the 24-day wait was not capped
        assert time.monotonic() - started >= 0.1  # it did wait (the cap, not an error)
        assert fetched[:4] == (1).to_bytes(4, "big")  # the Fetch's correlation id, first
        assert _answered(s)[:4] == (7).to_bytes(4, "big")  # then the ApiVersions
    assert _parked(b) == 0
