"""Split a stream thread's py-spy profile into the per-record cost centres of issue 40.

    .venv/bin/python bench/_profile_split.py PROFILE.txt [PROFILE2.txt ...] [--thread thread-1]

Reads py-spy's ``--format raw --threads`` output (as ``bench/peers_throughput.py --profile``
writes it) and prints the share of the thread's busy samples (idle waits left out) per cost
centre: the client's poll, the record objects built from its messages, the partition group,
punctuation, metrics, processor nodes, serdes, the collector and produce call, delivery
reports, commits. A sample counts for the innermost frame that names a centre, so a serde
called from a processor counts as serde, and the producer call inside a sink as produce.
Why a separate script: ``_profile_top.py`` buckets by library; this one by what the runtime
pays per record beyond the bare librdkafka loop.
"""

from __future__ import annotations

import argparse
from collections import Counter

IDLE = ("select (selectors.py", "EpollSelector.select", "poll (selectors.py")

CENTRES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("serdes (JSON, str, int)", ("serde.py", "json/", "orjson", "state/timestamped.py")),
    ("delivery reports (producer poll)", ("LibrdkafkaProducer.poll", "._delivered")),
    ("produce call (librdkafka)", ("LibrdkafkaProducer.produce ",)),
    ("collector (sink, send)", ("StreamTask._send", "LibrdkafkaCollector")),
    ("state stores (RocksDB, changelog)", ("stores.py", "state/rocksdb", "rocksdict")),
    ("user code", ("_peers_workloads", "<lambda>", "session_profiles")),
    ("punctuation checks", ("punctuate",)),
    ("metrics (sensors, loop meter)", ("LoopMeter", "sensors.py", "thread_metrics")),
    ("commit bookkeeping", ("commit.py", "committers.py", "CommitSchedule", "Committer")),
    ("record objects (messages to records)", ("LibrdkafkaConsumer._batches", "_new_record")),
    ("client poll (consume)", ("LibrdkafkaConsumer.getmany", "Wakeup.poll")),
    (
        "processor nodes (forward, processors)",
        ("_NodeContext", "StreamTask.deliver", "processors/", "processor.py", "graph/nodes.py"),
    ),
    ("record context, timestamp (StreamTask.process)", ("StreamTask.process",)),
    ("partition group, task inputs", ("partition_group.py", "task_inputs.py", "TaskManager.")),
    ("run loop, asyncio", ("thread.py", "asyncio/")),
)


def centre_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, needles in CENTRES:
            if any(n in frame for n in needles):
                return name
    return "other (start-up, imports, membership)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profiles", nargs="+")
    ap.add_argument("--thread", default="-thread-1", help="substring of the thread's name")
    args = ap.parse_args()
    centres: Counter[str] = Counter()
    idle = busy = 0
    for path in args.profiles:
        with open(path) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                frames = stack.split(";")
                if frames and frames[0].startswith("process "):  # py-spy --subprocesses
                    frames = frames[1:]
                if not frames or args.thread not in frames[0]:
                    continue
                n = int(count)
                if any(i in frames[-1] for i in IDLE):
                    idle += n
                    continue
                busy += n
                centres[centre_of(frames[1:])] += n
    if not busy:
        raise SystemExit(f"no busy samples for a thread matching {args.thread!r}")
    print(f"{busy} busy samples ({idle} idle left out) of threads matching {args.thread!r}")
    for name, n in centres.most_common():
        print(f"  {100 * n / busy:5.1f}%  {name}")


if __name__ == "__main__":
    main()
