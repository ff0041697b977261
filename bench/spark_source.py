"""Rows/s through the ``streamrt`` Spark data source, next to the client read directly.

The broker runs as a subprocess (``streamrt broker``). A topic of ``--records`` small records
is produced once, then read (a) by one confluent-kafka consumer in this process, configured as
the data source configures its own, touching each message's value, and (b) through Spark:
``spark.read.format("streamrt")`` into the ``noop`` sink, and (c) through Spark's own Kafka
source, ``spark.read.format("kafka")`` (``spark-sql-kafka-0-10`` from Maven Central,
``streamrt.spark.kafka_connector``), in the same session. Each gets one warm-up read first.
The ratios (Spark/direct, streamrt/native) are the figures that matter on a shared, noisy
machine.

    .venv/bin/python bench/spark_source.py --records 1000000 --partitions 2
    .venv/bin/python bench/spark_source.py --records 1000000 --partitions 2 --kafka apache
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from streamrt.spark.kafka_client import open_consumer
from streamrt.spark.kafka_connector import ConnectorUnavailable, connector_conf, connector_version
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


def _timed_read(
    spark: object, fmt: str, bootstrap: str, topic: str, records: int, **opts: str
) -> float:
    reader = spark.read.format(fmt)  # type: ignore[attr-defined]
    prefix = "kafka." if fmt == "kafka" else ""
    reader = reader.option(f"{prefix}bootstrap.servers", bootstrap).option("subscribe", topic)
    for key, value in opts.items():
        reader = reader.option(key, value)
    df = reader.load()
    if df.count() != records:  # warm-up (JIT, Python workers) and a correctness check
        raise RuntimeError(f"spark read a different number of records through {fmt}")
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def read_spark(
    bootstrap: str, topic: str, records: int, max_per_partition: int
) -> tuple[float, float | None, str]:
    """(streamrt seconds, native Kafka source seconds or None, connector version/why not)."""
    try:
        conf = connector_conf()
        version = connector_version()
    except ConnectorUnavailable as exc:
        conf, version = {}, f"unavailable: {exc}"
    spark = get_session(app_name="bench-spark-source", conf=conf)
    try:
        ours = _timed_read(
            spark,
            "streamrt",
            bootstrap,
            topic,
            records,
            maxRecordsPerPartition=str(max_per_partition),
        )
        native = None
        if conf:
            native = _timed_read(
                spark, "kafka", bootstrap, topic, records, startingOffsets="earliest"
            )
    finally:
        spark.stop()
    return ours, native, version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--max-records-per-partition", type=int, default=1_000_000)
    parser.add_argument(
        "--kafka",
        choices=("embedded", "apache"),
        default="embedded",
        help="the broker: streamrt's embedded broker (default) or Apache Kafka 4.3.1 (1 broker)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        if args.kafka == "apache":
            from streamrt.dev.apache_kafka import ApacheKafka

            kafka = ApacheKafka(1, work_dir=Path(data_dir) / "apache-kafka").start()
            bootstrap, stop = kafka.bootstrap, kafka.stop
        else:
            broker, bootstrap = start_broker(data_dir)

            def stop() -> None:
                broker.terminate()
                broker.wait(30)

        try:
            produce_s = fill_topic(bootstrap, "bench", args.partitions, args.records)
            read_direct(bootstrap, "bench", args.partitions, args.records)  # warm-up, as Spark
            direct_s = read_direct(bootstrap, "bench", args.partitions, args.records)
            spark_s, native_s, version = read_spark(
                bootstrap, "bench", args.records, args.max_records_per_partition
            )
        finally:
            stop()
    direct, via_spark = args.records / direct_s, args.records / spark_s
    print(
        f"records={args.records} partitions={args.partitions} broker={args.kafka} "
        f"(produced in {produce_s:.1f} s)"
    )
    print(f"direct confluent-kafka consumer : {direct:>12,.0f} rows/s ({direct_s:.2f} s)")
    print(f"spark.read.format('streamrt')   : {via_spark:>12,.0f} rows/s ({spark_s:.2f} s)")
    print(f"ratio spark/direct              : {via_spark / direct:.2f}")
    if native_s is None:
        print(f"spark.read.format('kafka')      : skipped, connector {version}")
        return
    native = args.records / native_s
    print(
        f"spark.read.format('kafka')      : {native:>12,.0f} rows/s ({native_s:.2f} s), "
        f"spark-sql-kafka-0-10 {version}"
    )
    print(f"ratio streamrt/native kafka     : {via_spark / native:.2f}")


if __name__ == "__main__":
    main()
