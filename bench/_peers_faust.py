"""faust-streaming contender of ``bench/peers_throughput.py``, written as a faust user would.

One worker, faust's defaults (at-least-once, its commit interval, RocksDB tables through the
rocksdict driver, one standby replica setting that does nothing with one worker). Word count
follows faust's own example: an agent splits lines and sends each word keyed by itself to a
topic (the repartition), a second agent counts in a table. Configured by the same ``PEERS_*``
environment as ``bench/_peers_streamrt.py``; run as ``python _peers_faust.py worker``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import faust
from _peers_workloads import stateless_keep, stateless_map, words

from streamrt.deploy.session_profiles import add_click, new_profile

ENV = os.environ.get
WORKLOAD = ENV("PEERS_WORKLOAD", "stateless")
APP_ID = ENV("PEERS_APP_ID", "peers")
PARTITIONS = int(ENV("PEERS_PARTITIONS", "4"))

app = faust.App(
    APP_ID,
    broker=f"kafka://{ENV('PEERS_BOOTSTRAP', '127.0.0.1:9092')}",
    store="rocksdb://",
    datadir=ENV("PEERS_STATE_DIR", "faust-data"),
    topic_partitions=PARTITIONS,
    web_enabled=False,
)
value_format = "raw" if WORKLOAD == "wordcount" else "json"
source = app.topic(ENV("PEERS_IN", "in"), key_serializer="raw", value_serializer=value_format)
sink = app.topic(ENV("PEERS_OUT", "out"), key_serializer="raw", value_serializer="json")

if WORKLOAD == "stateless":

    @app.agent(source)
    async def stateless(stream: Any) -> None:
        async for key, value in stream.items():
            if stateless_keep(value):
                await sink.send(key=key, value=stateless_map(value))

elif WORKLOAD == "wordcount":
    by_word = app.topic(
        f"{APP_ID}-words",
        key_serializer="raw",
        value_serializer="raw",
        partitions=PARTITIONS,
        internal=True,
    )
    counts = app.Table("counts", default=int, partitions=PARTITIONS)

    @app.agent(source)
    async def split(stream: Any) -> None:
        async for line in stream:
            for word in words(line.decode()):
                await by_word.send(key=word.encode(), value=word.encode())

    @app.agent(by_word)
    async def count(stream: Any) -> None:
        async for word in stream:
            counts[word] += 1
            await sink.send(key=word, value=counts[word])

else:
    profiles = app.Table("profiles", default=None, partitions=PARTITIONS)

    @app.agent(source)
    async def fold(stream: Any) -> None:
        async for key, click in stream.items():
            user = key.decode()
            profile = add_click(user, click, profiles.get(user) or new_profile())
            profiles[user] = profile
            await sink.send(key=key, value=profile)


if __name__ == "__main__":
    app.main()
