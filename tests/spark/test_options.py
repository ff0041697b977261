from pathlib import Path

import pytest

from streamrt.errors import ConfigError
from streamrt.spark.offsets import EARLIEST, LATEST
from streamrt.spark.options import client_config, parse_sink_options, parse_source_options

BASE = {"bootstrap.servers": "127.0.0.1:9092", "subscribe": "a, b"}


def test_batch_defaults_are_earliest_to_latest() -> None:
    options = parse_source_options(BASE, streaming=False)
    assert options.subscription.topics == ("a", "b")
    assert (options.starting.default, options.ending.default) == (EARLIEST, LATEST)


def test_streaming_starts_at_latest_like_spark() -> None:
    assert parse_source_options(BASE, streaming=True).starting.default == LATEST


def test_kafka_prefixed_options_reach_the_client() -> None:
    config = client_config({"kafka.bootstrap.servers": "h:1", "kafka.fetch.max.bytes": "1024"})
    assert config == {"bootstrap.servers": "h:1", "fetch.max.bytes": "1024"}


def test_missing_bootstrap_servers_is_named() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        parse_source_options({"subscribe": "a"}, streaming=False)


@pytest.mark.parametrize(
    "extra",
    [{}, {"subscribe": "a", "subscribePattern": "a.*"}],
)
def test_exactly_one_subscription_option(extra: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match="exactly one of the options subscribe"):
        parse_source_options({"bootstrap.servers": "h:1", **extra}, streaming=False)


def test_pattern_matches_whole_names_and_skips_internal_topics() -> None:
    options = parse_source_options(
        {"bootstrap.servers": "h:1", "subscribePattern": "orders.*"}, streaming=False
    )
    assert options.subscription.matches("orders-eu")
    assert not options.subscription.matches("old-orders")
    assert not parse_source_options(
        {"bootstrap.servers": "h:1", "subscribePattern": ".*"}, streaming=False
    ).subscription.matches("__consumer_offsets")


def test_assign_takes_json_partitions() -> None:
    options = parse_source_options(
        {"bootstrap.servers": "h:1", "assign": '{"a":[0,2]}'}, streaming=False
    )
    assert options.subscription.partitions == (("a", 0), ("a", 2))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"startingOffsets": "latest"}, "startingOffsets: 'latest'"),
        ({"endingOffsets": '{"a":{"0":-2}}'}, "endingOffsets: 'earliest'"),
        ({"maxRecordsPerPartition": "0"}, "maxRecordsPerPartition: must be >= 1"),
        ({"maxRecordsPerPartition": "lots"}, "maxRecordsPerPartition: expected an integer"),
        ({"subscribePattern": "(", "subscribe": ""}, "subscribePattern: invalid regex"),
    ],
)
def test_batch_option_errors_name_the_option(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_source_options({**BASE, **extra}, streaming=False)


def test_ending_offsets_are_rejected_for_streams() -> None:
    with pytest.raises(ConfigError, match="endingOffsets is only valid for batch"):
        parse_source_options({**BASE, "endingOffsets": "latest"}, streaming=True)


def test_sink_topic_option_is_optional() -> None:
    assert parse_sink_options({"bootstrap.servers": "h:1"}).topic is None
    assert parse_sink_options({"bootstrap.servers": "h:1", "topic": "out"}).topic == "out"


def test_apache_kafka_security_names_become_librdkafka_names(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not parsed here")
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="bob" password="s3cret";'
    )
    config = client_config(
        {
            "bootstrap.servers": "h:1",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(ca),
            "kafka.ssl.endpoint.identification.algorithm": "",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas,
            "kafka.fetch.max.bytes": "1024",
        }
    )
    assert config == {
        "bootstrap.servers": "h:1",
        "fetch.max.bytes": "1024",
        "security.protocol": "sasl_ssl",
        "ssl.ca.location": str(ca),
        "ssl.endpoint.identification.algorithm": "none",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "bob",
        "sasl.password": "s3cret",
    }


def test_librdkafka_security_names_pass_unchanged() -> None:
    options = {
        "bootstrap.servers": "h:1",
        "kafka.security.protocol": "sasl_plaintext",
        "kafka.sasl.mechanisms": "PLAIN",
        "kafka.sasl.username": "u",
        "kafka.sasl.password": "p",
    }
    assert client_config(options) == {
        "bootstrap.servers": "h:1",
        "security.protocol": "sasl_plaintext",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p",
    }


def test_bad_security_settings_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.location"):
        client_config(
            {
                "bootstrap.servers": "h:1",
                "kafka.security.protocol": "SSL",
                "kafka.ssl.truststore.location": str(tmp_path / "missing.pem"),
            }
        )
