"""The data source over SASL_SSL (SCRAM, TLS) with the options Spark's own Kafka source takes,
Apache Kafka's names: ``kafka.security.protocol``, ``kafka.ssl.truststore.*``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``. The client under the source is
librdkafka (confluent-kafka); the password must not show in the query plan."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, produce_acked, read_all
from tests.security.conftest import USERS, Pki, _make_pki, _users, address, secure_overrides

pytestmark = pytest.mark.spark
SECRET = USERS["alice"]


@pytest.fixture(scope="module")
def tls_pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    pytest.importorskip("cryptography")
    return _make_pki(tmp_path_factory.mktemp("spark-pki"))


@pytest.fixture(scope="module")
def sasl_broker(tls_pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """tests/security's secured broker: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL."""
    data_dir = tmp_path_factory.mktemp("spark-secure-broker")
    _users(data_dir)
    with BrokerThread(data_dir, secure_overrides(tls_pki)) as broker:
        yield broker


def _security(pki: Pki) -> dict[str, str]:
    return {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(pki.ca),
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        f'required username="alice" password="{SECRET}";',
    }


def test_read_and_write_over_sasl_ssl(
    spark: SparkSession,
    sasl_broker: BrokerThread,
    tls_pki: Pki,
    topic_name: str,
) -> None:
    plain = address(sasl_broker, "PLAINTEXT")  # the test's own setup and checks
    secured = address(sasl_broker, "SASL_SSL")  # all Spark knows
    create_topic(plain, topic_name, 2)
    create_topic(plain, f"{topic_name}-copy", 2)
    produced = produce_acked(plain, topic_name, [(f"k{i}".encode(), b"v") for i in range(20)])

    df = (
        spark.read.format("streamrt")
        .option("bootstrap.servers", secured)
        .option("subscribe", topic_name)
        .options(**_security(tls_pki))
        .load()
    )
    rows = sorted((r.partition, r.offset, r.key, r.value) for r in df.collect())
    assert rows == produced
    plan = df._jdf.queryExecution().toString()  # what explain() and the Spark UI show
    assert "BatchScan streamrt" in plan
    assert SECRET not in plan  # (Python data source options are not printed in plans)

    (
        df.select("key", "value")
        .write.format("streamrt")
        .option("bootstrap.servers", secured)
        .option("topic", f"{topic_name}-copy")
        .options(**_security(tls_pki))
        .mode("append")
        .save()
    )
    copied = sorted(r.key for r in read_all(plain, f"{topic_name}-copy"))
    assert copied == sorted(k for _p, _o, k, _v in produced)


def test_wrong_password_fails_on_the_driver(
    spark: SparkSession,
    sasl_broker: BrokerThread,
    tls_pki: Pki,
    topic_name: str,
) -> None:
    create_topic(address(sasl_broker, "PLAINTEXT"), topic_name, 1)
    options = _security(tls_pki)
    options["kafka.sasl.jaas.config"] = options["kafka.sasl.jaas.config"].replace(
        SECRET, "wrong-password"
    )
    reader = (
        spark.read.format("streamrt")
        .option("bootstrap.servers", address(sasl_broker, "SASL_SSL"))
        .option("subscribe", topic_name)
        .option("metadataTimeoutMs", "5000")
        .options(**options)
    )
    with pytest.raises(Exception, match=r"kafka\.sasl\.\*") as info:
        reader.load().collect()
    assert "wrong-password" not in str(info.value)
