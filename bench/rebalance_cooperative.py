"""Cooperative vs eager rebalancing under a steady load, streamrt beside Kafka Streams (issue 26
item 2).

    PYTHONPATH=. .venv/bin/python bench/rebalance_cooperative.py --out /tmp/rebalance
    PYTHONPATH=. .venv/bin/python bench/rebalance_cooperative.py --kafka apache --out /tmp/rb-ak

Three instances x 2 threads (one process each, static members) count a steady feed over
``--partitions`` input partitions under exactly_once_v2 (RocksDB, changelog, cache off, commit
100 ms, session 6 s). Contenders (``--contenders``; bench/_rebalance_contenders.py): streamrt
(``streamrt run``, its own group membership) and Kafka Streams 4.3.1 (bench/kafka-streams/,
only on ``--kafka apache``: a fresh Apache Kafka 4.3.1 broker per run, as
bench/rolling_deploy.py starts it; the default there runs both). Each output record's key
carries its input partition, so the output alone says when each partition was processed.
Scenarios: (a) a 4th instance is added, (b) one is stopped and its members removed from the
group (``streamrt instances remove``; Kafka Streams: the Admin API's
removeMembersFromConsumerGroup, which is what that command does), (c) one is SIGKILLed and not
restarted (session 6 s), (d) one more stream thread on one instance at run time (streamrt's
``POST /v1/threads:add``, Kafka Streams' ``addStreamThread()``). streamrt runs each eagerly
(``upgrade.from=2.3``), cooperatively and on KIP-1071 streams groups (``--protocols streams``:
``group.protocol=streams``, the broker assigns the tasks; its session and heartbeat are the
broker's ``group.streams.*``, set like the members' here); Kafka Streams 4.3.1 cooperatively
only (4.2 removed its eager protocol).

Measured per run, from the change on (bench/_rebalance_report.py): the longest processing gap
of the partitions that did not move and of those that moved (next to the longest gap before
the change), changelog records restored, generations, the time until the last assignment
(balanced), and correctness from the read_committed output: every key's counts are exactly
1..n (lost, duplicated). Gaps are measured on the harness's clock when its read_committed
consumer receives each partition's output, not from record timestamps, so both contenders are
measured alike. The baseline starts once every partition has one owner and no assignment
changed for 3 s. Prints a table, writes ``rebalance_cooperative.json`` (after every run) and a
chart per run, ``rebalance_<scenario>_<protocol>_<contender>.png``, into ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import free_port, start_broker
from _rebalance_contenders import (
    APP_ID,
    CONTENDERS,
    INPUT,
    OUTPUT,
    PROTOCOLS,
    Instance,
    change,
    start,
)
from _rebalance_report import (
    HEADER,
    QUIET_TYPES,
    Observed,
    Result,
    chart,
    explain,
    measure,
    placed,
    placement,
)

from streamrt.runtime import App

EVENTS = f"{APP_ID}-events"
QUIET_S = 3.0  # no assignment changed for this long: the group is placed


def build() -> App:
    app = App({"application.id": APP_ID})
    (
        app.stream(INPUT, key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="rb-store")
        .to_stream()
        .to(OUTPUT, value_serde="int")
    )
    return app


app = build()  # what ``streamrt run rebalance_cooperative:app`` runs


class Load(threading.Thread):
    """Feeds every input partition steadily; watches the read_committed output and follows
    the lifecycle events."""

    def __init__(self, bootstrap: str, partitions: int, rate: int, keys: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.partitions, self.rate, self.keys = bootstrap, partitions, rate, keys
        self.feeding = threading.Event()
        self.stop_flag = threading.Event()
        self.sent: dict[str, int] = defaultdict(int)
        self.arrivals: dict[int, list[float]] = defaultdict(list)
        self.counts: dict[str, list[int]] = defaultdict(list)
        self.events: list[dict[str, Any]] = []
        # the same output read_uncommitted: when it was produced (processed), committed or not
        self.produced: dict[int, list[float]] = defaultdict(list)

    def run(self) -> None:
        asyncio.run(self._go())

    async def _go(self) -> None:
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

        p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, enable_idempotence=True)
        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, isolation_level="read_committed")
        raw = AIOKafkaConsumer(bootstrap_servers=self.bootstrap)  # read_uncommitted
        for client in (p, c, raw):
            await client.start()
        outs = [TopicPartition(OUTPUT, q) for q in range(self.partitions)]
        tps = [*outs, TopicPartition(EVENTS, 0)]
        c.assign(tps)
        raw.assign(outs)
        await c.seek_to_beginning(*tps)
        await raw.seek_to_beginning(*outs)
        i = 0
        try:
            while not self.stop_flag.is_set():
                if self.feeding.is_set():
                    for part in range(self.partitions):
                        key = f"p{part}-k{i % self.keys}"
                        await p.send(INPUT, b"x", key=key.encode(), partition=part)
                        self.sent[key] += 1
                    i += 1
                for tp, recs in (await c.getmany(timeout_ms=0)).items():
                    self._received(tp.topic, recs)
                batch = await raw.getmany(timeout_ms=0)
                now = time.time()
                for recs in batch.values():
                    for r in recs:
                        self.produced[_partition_of(r.key)].append(now)
                await asyncio.sleep(1 / self.rate)
            await p.flush()
        finally:
            for client in (p, c, raw):
                await client.stop()

    def _received(self, topic: str, recs: list[Any]) -> None:
        if topic == EVENTS:
            self.events += [json.loads(r.value) for r in recs]
            return
        now = time.time()
        for r in recs:
            self.arrivals[_partition_of(r.key)].append(now)
            self.counts[r.key.decode()].append(int.from_bytes(r.value, "big", signed=True))

    def silent(self, partitions: int) -> str:
        """The partitions with no output yet, their owners (from the last ``assignment`` of
        each thread) and each owner's last lifecycle events: for a step that timed out."""
        missing = sorted(set(range(partitions)) - set(self.arrivals))
        events = [e for e in list(self.events) if e["type"] not in QUIET_TYPES]
        tasks: dict[str, list[str]] = {}
        for e in events:
            if e["type"] == "assignment":
                tasks[str(e.get("thread_id"))] = list(e["fields"].get("tasks") or [])
        owners = {
            p: [t for t, ts in tasks.items() if any(x.endswith(f"_{p}") for x in ts)]
            for p in missing
        }
        lines = [f"no output from {missing}; owners {owners}"]
        for thread in sorted({t for ts in owners.values() for t in ts}):
            mine = [e for e in events if e.get("thread_id") == thread][-10:]
            lines += [f"  {thread} {e['type']} {e.get('fields', {})}"[:300] for e in mine]
        return "\n".join(lines)

    def caught_up(self) -> bool:
        return all(
            len(self.counts.get(k, [])) >= n and max(self.counts[k]) >= n
            for k, n in self.sent.items()
        )

    def placed(self, alive: set[str]) -> bool:
        """Every partition owned by one live thread, and no assignment for QUIET_S."""
        now = time.time()
        events = list(self.events)
        last = max((e["ts"] for e in events if e["type"] == "assignment"), default=now)
        return now - last >= QUIET_S and placed(events, alive, self.partitions, now)

    def took_effect(self, alive: set[str], joined: set[str]) -> bool:
        """The change is in: every partition placed among ``alive``, each of ``joined`` (new
        instances) owning one."""
        events = list(self.events)
        holders = {
            th.split("/")[0] for th, ps in placement(events, time.time(), alive).items() if ps
        }
        return joined <= holders and self.placed(alive)


def _partition_of(key: bytes) -> int:
    """The input partition an output key carries: ``p<partition>-k<n>``."""
    return int(key[1 : key.index(b"-")])


def create_topics(bootstrap: str, partitions: int) -> None:
    """Input and output, and the events topic (one partition, as streamrt creates it)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def go() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            topics = [NewTopic(t, partitions, 1) for t in (INPUT, OUTPUT)]
            await admin.create_topics([*topics, NewTopic(EVENTS, 1, 1)])
        finally:
            await admin.close()

    asyncio.run(go())


def read_events(bootstrap: str) -> list[dict[str, Any]]:
    """Every lifecycle event the instances produced to ``<application.id>-events``."""
    from aiokafka import AIOKafkaConsumer

    async def go() -> list[dict[str, Any]]:
        c = AIOKafkaConsumer(
            EVENTS, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
        )
        await c.start()
        out: list[dict[str, Any]] = []
        try:
            idle = 0
            while idle < 6:
                batch = await c.getmany(timeout_ms=500)
                idle = 0 if batch else idle + 1
                out += [json.loads(r.value) for rs in batch.values() for r in rs]
        finally:
            await c.stop()
        return out

    return asyncio.run(go())


def read_input_keys(bootstrap: str, partitions: int) -> dict[str, int]:
    """How many records of each key the input topic holds: a run with duplicates says with it
    whether the input itself held them (the feed's producer) or the app read some twice."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> dict[str, int]:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        await c.start()
        held: dict[str, int] = defaultdict(int)
        try:
            tps = [TopicPartition(INPUT, q) for q in range(partitions)]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            ends = await c.end_offsets(tps)
            while [tp for tp in tps if await c.position(tp) < ends[tp]]:
                for recs in (await c.getmany(timeout_ms=500)).values():
                    for r in recs:
                        held[r.key.decode()] += 1
        finally:
            await c.stop()
        return dict(held)

    return asyncio.run(go())


def wait(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    live: list[Instance],
    detail: Callable[[], str] | None = None,
) -> None:
    """Until ``predicate``; fails at once if an instance in ``live`` exited. ``detail`` says
    what the run looked like when the wait timed out."""
    deadline = time.monotonic() + timeout
    while not predicate():
        dead = [i.name for i in live if i.proc.poll() is not None]
        if dead:
            raise RuntimeError(f"instance {', '.join(dead)} exited while waiting: {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"benchmark step timed out: {what}" + (f" ({detail()})" if detail else "")
            )
        time.sleep(0.2)


@contextlib.contextmanager
def broker(kind: str, work: Path) -> Iterator[str]:
    """A fresh broker for one run: the embedded one, or Apache Kafka 4.3.1 (1 node)."""
    if kind == "apache":
        from streamrt.dev.apache_kafka import ApacheKafka

        with ApacheKafka(1, work_dir=work / "apache-kafka") as kafka:
            yield kafka.bootstrap
        return
    port = free_port()
    proc = start_broker(
        str(work / "broker"),
        port,
        "group.initial.rebalance.delay.ms=0",
        "group.min.session.timeout.ms=1000",
        # a streams group (protocol "streams") takes the broker's timeouts, not the members'
        "group.streams.session.timeout.ms=6000",
        "group.streams.heartbeat.interval.ms=500",
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


def run_once(
    scenario: str, protocol: str, contender: str, args: argparse.Namespace, work: Path
) -> Result:
    with broker(args.kafka, work) as bootstrap:
        load = Load(bootstrap, args.partitions, args.rate, args.keys)
        instances: dict[str, Instance] = {}

        def spawn(name: str) -> Instance:
            return start(contender, name, bootstrap, work, protocol)

        try:
            create_topics(bootstrap, args.partitions)
            load.start()
            instances.update({n: spawn(n) for n in ("i1", "i2", "i3")})
            load.feeding.set()
            live = list(instances.values())
            every = args.partitions
            wait(
                lambda: len(load.arrivals) == every,
                180,
                "every partition processed",
                live,
                lambda: load.silent(every),
            )
            wait(lambda: load.placed(set(instances)), 120, "every partition placed", live)
            time.sleep(args.baseline)
            before = set(instances)
            t_change = time.time()
            alive = change(scenario, instances, spawn)
            time.sleep(args.settle)
            # a loaded machine can start a new instance slower than the settle: the end waits
            # for the change to be in (a new instance owning partitions, every one placed)
            live = [instances[n] for n in alive]
            took = lambda: load.took_effect(set(alive), set(alive) - before)  # noqa: E731
            wait(took, 120, "the change to take effect", live)
            t_end = time.time()
            load.feeding.clear()
            live = [instances[n] for n in alive]
            wait(load.caught_up, 120, "the output caught up with the feed", live)
        finally:
            load.stop_flag.set()
            for inst in instances.values():
                inst.stop()
            load.join(30)
        events = read_events(bootstrap)
        held = read_input_keys(bootstrap, args.partitions)
    o = Observed(
        args.partitions, load.sent, load.arrivals, load.counts, events, t_change, t_end,
        args.baseline, before, alive, load.produced, held,
    )  # fmt: skip
    result = measure(scenario, protocol, contender, args.kafka, o)
    chart(result, o, Path(args.out))
    if not result.exact:
        print(f"NOT EXACT {scenario} {protocol} {contender}:\n{explain(o)}", file=sys.stderr)
    return result


def runs(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(scenario, protocol, contender) in run order; Kafka Streams only where it can run."""
    contenders = args.contenders.split(",")
    if bad := [c for c in contenders if c not in CONTENDERS]:
        raise SystemExit(f"unknown contender(s) {bad}: choose from {', '.join(CONTENDERS)}")
    if "kafka-streams" in contenders and args.kafka != "apache":
        raise SystemExit("Kafka Streams runs on Apache Kafka only: add --kafka apache")
    return [
        (s, p, c)
        for s in args.scenarios.split(",")
        for c in contenders
        for p in args.protocols.split(",")
        if p in PROTOCOLS[c]
    ]


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", default="rebalance-out")
    parser.add_argument("--kafka", choices=("embedded", "apache"), default="embedded")
    parser.add_argument(
        "--contenders",
        help="comma list of streamrt, kafka-streams (default: both on apache, else streamrt)",
    )
    parser.add_argument("--scenarios", default="a,b,c,d")
    parser.add_argument("--protocols", default="eager,cooperative")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=int, default=50, help="rounds per second (1 per partition)")
    parser.add_argument("--keys", type=int, default=20, help="keys per partition")
    parser.add_argument("--baseline", type=float, default=10.0, help="seconds before the change")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after the change")
    args = parser.parse_args()
    if args.contenders is None:
        args.contenders = ",".join(CONTENDERS) if args.kafka == "apache" else "streamrt"
    return args


def main() -> None:
    args = parse()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    todo = runs(args)
    if any(c == "kafka-streams" for _, _, c in todo):
        from _kafka_streams import ensure_jar

        ensure_jar()
    results: list[Result] = []
    failed: list[str] = []
    for scenario, protocol, contender in todo:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                results.append(run_once(scenario, protocol, contender, args, Path(tmp)))
            except Exception as exc:  # the other runs still run; the exit code says it
                failed.append(f"{scenario} {protocol} {contender}: {exc!r}")
                print(f"FAILED {failed[-1]}", flush=True)
        (out / "rebalance_cooperative.json").write_text(
            json.dumps([asdict(r) for r in results], indent=2)
        )
    print(f"broker: {args.kafka}")
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|")
    for r in results:
        print(r.row())
    for line in failed:
        print(f"FAILED {line}")
    if "eager" in args.protocols and "kafka-streams" in args.contenders:
        print("kafka-streams eager: not run, Kafka Streams 4.3.1 has no eager protocol")
    if failed or not all(r.exact for r in results):
        sys.exit("a run failed or its output was not exact (see above)")


if __name__ == "__main__":
    main()
