"""Rows/s through the ``streamrt`` Spark data source, next to the client read directly.

The broker runs as a subprocess (``streamrt broker``). A topic of ``--records`` small records
is produced once, then read (a) by one confluent-kafka consumer in this process, configured as
the data source configures its own, touching each message's value, and (b) through Spark:
``spark.read.format("streamrt")`` into the ``noop`` sink. Both get one warm-up read first.
The ratio Spark/direct is the figure that matters on a shared, noisy machine.

    .venv/bin/python bench/spark_source.py --records 1000000 --partitions 2
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from streamrt.spark.kafka_client import open_consumer
from streamrt.spark.session import get_session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_broker(data_dir: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cli = os.path.join(os.path.dirname(sys.executable), "streamrt")
    proc = subprocess.Popen(
        [cli, "--log-level", "WARNING", "broker", "--port", str(port), "--data-dir", data_dir],
        stdout=subprocess.DEVNULL,
    )
    bootstrap = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc, bootstrap
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("broker did not start")


def fill_topic(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000}
    )
    value = b"x" * 16
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=b"%08d" % i, value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(120):
        raise RuntimeError("produce did not finish")
    return time.perf_counter() - started


def read_direct(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    consumer = open_consumer({"bootstrap.servers": bootstrap})  # the data source's settings
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = eof = value_bytes = 0
    started = time.perf_counter()
    while eof < partitions:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error() is not None:
                eof += message.error().code() == ck.KafkaError._PARTITION_EOF
                continue
            value_bytes += len(message.value() or b"")
            seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    if seen != records:
        raise RuntimeError(f"direct read saw {seen} records, expected {records}")
    return elapsed


def read_spark(bootstrap: str, topic: str, records: int, max_per_partition: int) -> float:
    spark = get_session(app_name="bench-spark-source")
    df = (
        spark.read.format("streamrt")
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("maxRecordsPerPartition", str(max_per_partition))
        .load()
    )
    if df.count() != records:  # warm-up (JIT, Python workers) and a correctness check
        raise RuntimeError("spark read a different number of records")
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - started
    spark.stop()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--max-records-per-partition", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        broker, bootstrap = start_broker(data_dir)
        try:
            produce_s = fill_topic(bootstrap, "bench", args.partitions, args.records)
            read_direct(bootstrap, "bench", args.partitions, args.records)  # warm-up, as Spark
            direct_s = read_direct(bootstrap, "bench", args.partitions, args.records)
            spark_s = read_spark(bootstrap, "bench", args.records, args.max_records_per_partition)
        finally:
            broker.terminate()
            broker.wait(30)
    direct, via_spark = args.records / direct_s, args.records / spark_s
    print(f"records={args.records} partitions={args.partitions} (produced in {produce_s:.1f} s)")
    print(f"direct confluent-kafka consumer : {direct:>12,.0f} rows/s ({direct_s:.2f} s)")
    print(f"spark.read.format('streamrt')   : {via_spark:>12,.0f} rows/s ({spark_s:.2f} s)")
    print(f"ratio spark/direct              : {via_spark / direct:.2f}")


if __name__ == "__main__":
    main()
