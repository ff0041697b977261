"""A broker killed with SIGKILL mid-produce (acks=all, fsync=always) loses nothing acknowledged."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamrt.cli",
            "broker",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            "--fsync",
            "always",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert "listening" in line, line
    return proc


def test_sigkill_while_producing_loses_no_acknowledged_record(tmp_path: Path) -> None:
    port = _free_port()
    bootstrap = f"127.0.0.1:{port}"
    data_dir = tmp_path / "broker"
    proc = _start(data_dir, port)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("crash", 2, 1)])["crash"].result(10)
    acked: set[str] = set()
    seq = 0
    try:
        for _round in range(3):
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 2,
                    "message.timeout.ms": 3000,
                }
            )

            def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
                if err is None:
                    acked.add(msg.value().decode())

            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                producer.produce(
                    "crash", value=f"{seq:08d}", partition=seq % 2, on_delivery=on_delivery
                )
                seq += 1
                producer.poll(0)
                if seq % 200 == 0:
                    time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            producer.flush(4)  # drain callbacks; undelivered records are simply not acked
            proc = _start(data_dir, port)
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition("crash", 0, 0), TopicPartition("crash", 1, 0)])
        seen: list[tuple[int, int, str]] = []
        idle = time.monotonic()
        while time.monotonic() - idle < 3:
            msgs = consumer.consume(500, timeout=0.5)
            if msgs:
                idle = time.monotonic()
            for m in msgs:
                assert m.error() is None, m.error()
                seen.append((m.partition(), m.offset(), m.value().decode()))
        consumer.close()
    finally:
        proc.terminate()
        proc.wait(10)
    values = [v for *_, v in seen]
    assert acked, "nothing was acknowledged: the test proved nothing"
    assert acked <= set(values), f"lost {len(acked - set(values))} acknowledged records"
    assert len(values) == len(set(values)), "duplicated records"
    for p in (0, 1):
        part = [(o, v) for pp, o, v in seen if pp == p]
        assert [o for o, _ in part] == list(range(len(part)))
        assert [v for _, v in part] == sorted(v for _, v in part)  # in order
