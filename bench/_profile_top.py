"""Summarise a py-spy ``--format raw --threads`` profile: where one thread's time goes.

    .venv/bin/python bench/_profile_top.py PROFILE.txt [--thread thread-1] [--top 25]

Prints the share of the thread's samples per cost bucket (idle in ``select``, JSON, the
aiokafka producer, the consumer, RocksDB, user code...), then the top functions by self and
by inclusive time. Buckets are matched on the innermost frame that names one, so a JSON
encode inside the producer counts as JSON.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")

BUCKETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("idle (select/epoll wait)", ("select (selectors.py", "poll (selectors.py", "EpollSelector")),
    ("json encode/decode", ("json/", "orjson", "JsonSerde")),
    ("rocksdict (store get/put/write)", ("rocksdict", "store", "Rdict")),
    (
        "aiokafka producer (send, batching, record encoding)",
        ("aiokafka/producer", "aiokafka/record", "ProducerCollector"),
    ),
    ("aiokafka consumer (fetch, decode batches)", ("aiokafka/consumer", "fetcher")),
    ("aiokafka conn/protocol", ("aiokafka/conn", "aiokafka/protocol", "aiokafka/client")),
    ("user code (the fold / map / split)", ("session_profiles", "_peers_workloads", "<lambda>")),
    ("streamrt processing (task, operators, serdes)", ("streamrt/",)),
    ("asyncio machinery", ("asyncio/",)),
)


def bucket_of(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, needles in BUCKETS:
            if any(n in frame for n in needles):
                return name
    return "other"


def short(frame: str) -> str:
    m = FRAME.match(frame)
    return f"{m.group('func')} ({m.group('file')})" if m else frame


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--thread", default="-thread-1", help="substring of the thread's name")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    buckets: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    with open(args.profile) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames and frames[0].startswith("process "):  # py-spy --subprocesses adds it
                frames = frames[1:]
            if not frames or args.thread not in frames[0]:
                continue
            n = int(count)
            total += n
            body = frames[1:]
            buckets[bucket_of(body)] += n
            if body:
                self_time[short(body[-1])] += n
            for fr in {short(fr) for fr in body}:
                inclusive[fr] += n
    if not total:
        raise SystemExit(f"no samples for a thread matching {args.thread!r}")
    print(f"{total} samples of threads matching {args.thread!r}\n\nbucket shares:")
    for name, n in buckets.most_common():
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("\ntop self time:")
    for name, n in self_time.most_common(args.top):
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("\ntop inclusive time:")
    for name, n in inclusive.most_common(args.top + 10):
        print(f"  {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
