"""An app's missing source topics are named at once, with the command that creates them.

On both brokers (embedded, Apache Kafka): the check lists topics without auto-creating them, the
advice it prints is a command that works as printed, and a topic created while the app waits
ends the wait.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import threading

import pytest

from streamrt.cli import main as cli_main
from streamrt.errors import ConfigError
from streamrt.runtime.instance.source_topics import (
    MissingSourceTopicsError,
    missing_source_topics,
    wait_for_source_topics,
)
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic, wait_until


def test_a_missing_source_topic_is_named_with_the_command_that_creates_it(
    any_broker: BrokerEndpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "present", 2)
    with pytest.raises(MissingSourceTopicsError) as raised:
        asyncio.run(wait_for_source_topics(bootstrap, ["present", "text-input"], wait_s=0))
    error = raised.value
    assert isinstance(error, ConfigError)
    assert error.missing == ["text-input"]
    assert "source topics do not exist: text-input" in str(error)
    # The check itself created nothing (a Metadata request naming it could have auto-created it).
    assert asyncio.run(missing_source_topics(bootstrap, ["present", "text-input"])) == [
        "text-input"
    ]

    # The advice works as printed.
    command = str(error).split("create them with ", 1)[1].split(" (add", 1)[0]
    argv = shlex.split(command)
    assert argv[0] == "streamrt"
    assert cli_main(argv[1:]) == 0
    capsys.readouterr()
    # Apache Kafka answers CreateTopics before every metadata view has the topic: a loaded
    # CI run once listed it missing just after the command returned
    wait_until(
        lambda: asyncio.run(missing_source_topics(bootstrap, ["present", "text-input"])) == [],
        20,
        "the created topic in the metadata",
    )
    asyncio.run(wait_for_source_topics(bootstrap, ["present", "text-input"], wait_s=0))


def test_waiting_says_at_once_what_for_and_ends_when_the_topic_appears(
    any_broker: BrokerEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap = any_broker.bootstrap
    warned = threading.Event()

    class Spy(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno == logging.WARNING and "late-topic" in record.getMessage():
                warned.set()

    spy = Spy()
    logger = logging.getLogger("streamrt.runtime.instance.source_topics")
    logger.addHandler(spy)

    def create_once_warned() -> None:
        # Created only after the warning: the wait must have said what it waits for first.
        if warned.wait(20):
            create_topic(bootstrap, "late-topic", 1)

    creator = threading.Thread(target=create_once_warned)
    creator.start()
    try:
        asyncio.run(wait_for_source_topics(bootstrap, ["late-topic"], wait_s=30, poll_s=0.1))
    finally:
        creator.join()
        logger.removeHandler(spy)
    assert warned.is_set()
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "late-topic" in m and "streamrt topics create --bootstrap-server" in m for m in messages
    )


def test_giving_up_names_every_missing_topic(any_broker: BrokerEndpoint) -> None:
    with pytest.raises(MissingSourceTopicsError, match=r"after 0.3 s: a-missing, b-missing"):
        asyncio.run(
            wait_for_source_topics(any_broker.bootstrap, ["b-missing", "a-missing"], wait_s=0.3)
        )
