"""One group of 1,000 static members against the broker: formation, heartbeats, rolling bounce.

The broker runs as a subprocess (``streamrt broker``), the members are raw protocol clients on
:class:`streamrt.admin.connection.BrokerConnection`, one connection each (a parked JoinGroup
holds its connection). Measured:

* formation: from the first JoinGroup until every member has its SyncGroup assignment (the
  leader assigns a 1,000-partition topic round-robin); it includes the initial rebalance delay;
* heartbeats handled per second with every member heartbeating back to back, next to the
  baseline of ApiVersions round trips per second on the same connections (the ratio is the
  figure that counts: this client is Python too, and the machine is shared);
* a rolling bounce: each member in turn closes its connection and rejoins with member id ""
  and its instance id, then SyncGroups, while the others keep heartbeating once a second.
  Rebalances are read from the broker's /metrics (goal: 0, generation unchanged).

    .venv/bin/python bench/coordinator_static.py --members 1000 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable

from streamrt.admin.client import AdminClient
from streamrt.admin.connection import BrokerConnection
from streamrt.admin.consumer_protocol import decode_assignment
from streamrt.admin.models import NewTopic

GROUP = "bench-static"
TOPIC = "bench-static-topic"
PROTOCOL = "roundrobin"
SESSION_TIMEOUT_MS = 120_000
REBALANCE_TIMEOUT_MS = 120_000
RESPONSE_TIMEOUT_S = 300.0
REBALANCE_IN_PROGRESS = 27  # Kafka's error code


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    return struct.pack(">hi", 0, 1) + _string(topic) + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [(topic, partitions)], null user data."""
    body = struct.pack(">hi", 0, 1) + _string(topic) + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">i", p) for p in partitions)
    return body + struct.pack(">i", -1)


def start_broker(
    data_dir: str, port: int, metrics_port: int, delay_ms: int
) -> subprocess.Popen[str]:
    overrides = {
        "group.initial.rebalance.delay.ms": str(delay_ms),
        "offsets.topic.num.partitions": "4",
        "num.partitions": "1",
    }
    argv = [sys.executable, "-m", "streamrt.cli", "broker", "--port", str(port)]
    argv += ["--data-dir", data_dir, "--metrics-port", str(metrics_port)]
    for key, value in overrides.items():
        argv += ["--override", f"{key}={value}"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening" not in line:
        proc.kill()
        raise RuntimeError(f"broker did not start: {line!r}")
    return proc


def group_metrics(metrics_port: int) -> dict[str, float]:
    """This group's generation and rebalances_total from the broker's /metrics."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        for name in ("streamrt_group_generation", "streamrt_group_rebalances_total"):
            if line.startswith(f'{name}{{group="{GROUP}"}}'):
                out[name] = float(line.rsplit(" ", 1)[1])
    return out


class StaticMember:
    """One static member: its connection, instance id, member id and generation."""

    def __init__(self, index: int, port: int) -> None:
        self.instance_id = f"instance-{index:04d}"
        self.port = port
        self.conn: BrokerConnection | None = None
        self.member_id = ""
        self.generation = -1
        self.partitions: list[int] = []
        self.busy = asyncio.Lock()

    async def connect(self) -> None:
        self.conn = await BrokerConnection.open(
            "127.0.0.1",
            self.port,
            client_id=self.instance_id,
            request_timeout=RESPONSE_TIMEOUT_S,
        )

    @property
    def c(self) -> BrokerConnection:
        assert self.conn is not None
        return self.conn

    async def join_and_sync(self, partitions: int) -> None:
        """JoinGroup, then SyncGroup (as leader, assign round-robin); a SyncGroup answered
        REBALANCE_IN_PROGRESS (a member joined after the join phase closed: with no initial
        rebalance delay the first JoinGroup can complete it alone) joins again with the member
        id it was given, as every Kafka client does. The first JoinGroup has member id "", as
        a restarted static member's has."""
        self.member_id = ""
        for _ in range(20):
            if await self._join_and_sync_once(partitions):
                return
        raise RuntimeError(f"{self.instance_id}: no stable generation after 20 joins")

    async def _join_and_sync_once(self, partitions: int) -> bool:
        joined = await self.c.call(
            11,
            group_id=GROUP,
            session_timeout=SESSION_TIMEOUT_MS,
            rebalance_timeout=REBALANCE_TIMEOUT_MS,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[{"name": PROTOCOL, "metadata": subscription(TOPIC)}],
            reason=None,
        )
        if joined.error_code != 0:
            raise RuntimeError(f"{self.instance_id}: JoinGroup error {joined.error_code}")
        self.member_id, self.generation = joined.member_id, joined.generation_id
        assignments = []
        if joined.leader == joined.member_id and not getattr(joined, "skip_assignment", False):
            ids = sorted(m.member_id for m in joined.members)
            owned: dict[str, list[int]] = {m: [] for m in ids}
            for p in range(partitions):
                owned[ids[p % len(ids)]].append(p)
            assignments = [{"member_id": m, "assignment": assignment(TOPIC, owned[m])} for m in ids]
        synced = await self.c.call(
            14,
            group_id=GROUP,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocol_name=PROTOCOL,
            assignments=assignments,
        )
        if synced.error_code == REBALANCE_IN_PROGRESS:
            return False
        if synced.error_code != 0 or not synced.assignment:
            raise RuntimeError(f"{self.instance_id}: SyncGroup error {synced.error_code}")
        self.partitions = list(decode_assignment(synced.assignment).partitions.get(TOPIC, ()))
        return True

    async def heartbeat(self) -> int:
        response = await self.c.call(
            12,
            group_id=GROUP,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        return int(response.error_code)

    async def api_versions(self) -> int:
        response = await self.c.call(18, client_software_name="bench", client_software_version="0")
        return int(response.error_code)


async def rate(
    members: list[StaticMember], call: Callable[[StaticMember], Awaitable[int]], seconds: float
) -> tuple[float, Counter[int]]:
    """Round trips per second with every member calling back to back; error codes seen."""
    codes: Counter[int] = Counter()
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds

    async def run(m: StaticMember) -> None:
        while loop.time() < end:
            codes[await call(m)] += 1

    started = time.perf_counter()
    await asyncio.gather(*(run(m) for m in members))
    return sum(codes.values()) / (time.perf_counter() - started), codes


async def rolling_bounce(
    members: list[StaticMember], partitions: int
) -> tuple[float, Counter[int]]:
    """Bounce members one at a time while the others heartbeat every second."""
    codes: Counter[int] = Counter()
    done = asyncio.Event()

    async def keep_alive(m: StaticMember) -> None:
        while not done.is_set():
            async with m.busy:  # never heartbeat on a connection being replaced
                codes[await m.heartbeat()] += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), 1.0)

    background = [asyncio.create_task(keep_alive(m)) for m in members]
    started = time.perf_counter()
    for m in members:
        before = list(m.partitions)
        async with m.busy:
            await m.c.close()
            await m.connect()
            await m.join_and_sync(partitions)
        if m.partitions != before:
            raise RuntimeError(f"{m.instance_id} came back with {m.partitions}, had {before}")
    elapsed = time.perf_counter() - started
    done.set()
    await asyncio.gather(*background)
    return elapsed, codes


async def bench(port: int, metrics_port: int, n: int, seconds: float) -> dict[str, object]:
    async with AdminClient(f"127.0.0.1:{port}") as admin:
        await admin.create_topics([NewTopic(TOPIC, n, 1)])
    members = [StaticMember(i, port) for i in range(n)]
    for i in range(0, n, 100):
        await asyncio.gather(*(m.connect() for m in members[i : i + 100]))

    baseline, _ = await rate(members, StaticMember.api_versions, seconds)

    started = time.perf_counter()
    await asyncio.gather(*(m.join_and_sync(n) for m in members))
    formation_s = time.perf_counter() - started
    owned = sorted(p for m in members for p in m.partitions)
    assert owned == list(range(n)), "every partition assigned exactly once"
    formed = group_metrics(metrics_port)

    heartbeats, hb_codes = await rate(members, StaticMember.heartbeat, seconds)
    bounce_s, bounce_codes = await rolling_bounce(members, n)
    after = group_metrics(metrics_port)
    for m in members:
        await m.c.close()
    return {
        "members": n,
        "formation_s": round(formation_s, 2),
        "generation_after_formation": formed["streamrt_group_generation"],
        "api_versions_per_s": round(baseline),
        "heartbeats_per_s": round(heartbeats),
        "heartbeat_errors": {str(k): v for k, v in hb_codes.items() if k != 0},
        "heartbeats_vs_api_versions": round(heartbeats / baseline, 3),
        "bounce_s": round(bounce_s, 2),
        "bounce_per_member_ms": round(1000 * bounce_s / n, 2),
        "heartbeat_errors_during_bounce": {str(k): v for k, v in bounce_codes.items() if k != 0},
        "rebalances_during_bounce": after["streamrt_group_rebalances_total"]
        - formed["streamrt_group_rebalances_total"],
        "generation_after_bounce": after["streamrt_group_generation"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each rate phase")
    parser.add_argument(
        "--initial-delay-ms", type=int, default=1000, help="group.initial.rebalance.delay.ms"
    )
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.members + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.members + 1024), hard))
    port, metrics_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        proc = start_broker(data_dir, port, metrics_port, args.initial_delay_ms)
        try:
            result = asyncio.run(bench(port, metrics_port, args.members, args.seconds))
        finally:
            proc.terminate()
            proc.wait(30)
    result["initial_delay_ms"] = args.initial_delay_ms
    print(json.dumps(result, indent=2))
    return 0 if result["rebalances_during_bounce"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
