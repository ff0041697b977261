"""Topic lifecycle, persisted metadata, producer ids, maintenance and thread safety."""

from __future__ import annotations

import threading

import pytest

from streamrt.errors import ErrorCode, KafkaError
from tests.broker.log.conftest import make_batch, read_all, value_batch


def _code(fn, *args, **kwargs) -> ErrorCode:
    with pytest.raises(KafkaError) as err:
        fn(*args, **kwargs)
    return err.value.code


def test_topic_metadata_persists_across_restart(manager_factory):
    m = manager_factory()
    info = m.create_topic("orders", 3, {"cleanup.policy": "compact"})
    m.create_topic("__consumer_offsets", 2, {"cleanup.policy": "compact"}, internal=True)
    m.close()
    m2 = manager_factory()
    assert m2.topics()["orders"] == info
    assert m2.topics()["__consumer_offsets"].internal
    assert m2.effective_config("orders")["cleanup.policy"] == "compact"
    assert m2.effective_config("orders")["segment.bytes"] == 1073741824
    m2.log("orders", 2)
    assert _code(m2.log, "orders", 3) == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad name", "ü", "a/b"])
def test_illegal_topic_names_are_rejected(manager_factory, name):
    assert _code(manager_factory().create_topic, name, 1) == ErrorCode.invalid_topic_exception


def test_create_topic_errors(manager_factory):
    m = manager_factory()
    m.create_topic("a.b", 1)
    assert _code(m.create_topic, "a.b", 1) == ErrorCode.topic_already_exists
    assert _code(m.create_topic, "a_b", 1) == ErrorCode.invalid_topic_exception
    assert _code(m.create_topic, "x", 0) == ErrorCode.invalid_partitions
    with pytest.raises(KafkaError) as err:
        m.create_topic("x", 1, {"segment.bytes": "nope"})
    assert err.value.code == ErrorCode.invalid_config and "segment.bytes" in str(err.value)
    assert _code(m.create_topic, "x", 1, {"no.such.key": "1"}) == ErrorCode.invalid_config
    m.create_topic("y", 1, validate_only=True)
    assert "y" not in m.topics() and "x" not in m.topics()
    assert m.create_topic("z", -1).num_partitions == 1


def test_delete_topic_removes_files_and_name_can_be_reused(manager_factory, tmp_path):
    m = manager_factory()
    m.create_topic("t", 2)
    m.log("t", 0).append(value_batch(0), 0)
    m.delete_topic("t")
    assert not (tmp_path / "data" / "t-0").exists()
    assert _code(m.delete_topic, "t") == ErrorCode.unknown_topic_or_partition
    m.create_topic("t", 1)
    assert m.log("t", 0).log_end_offset == 0


def test_create_partitions(manager_factory):
    m = manager_factory()
    m.create_topic("t", 2)
    assert _code(m.create_partitions, "t", 2) == ErrorCode.invalid_partitions
    m.create_partitions("t", 4, validate_only=True)
    assert m.topics()["t"].num_partitions == 2
    m.create_partitions("t", 4)
    assert m.topics()["t"].num_partitions == 4
    assert m.log("t", 3).log_end_offset == 0


def test_alter_topic_config_incremental_and_replace_all(manager_factory):
    m = manager_factory()
    m.create_topic("t", 1, {"retention.ms": "1000", "segment.bytes": "5000"})
    m.alter_topic_config("t", {"cleanup.policy": "compact"}, delete=["retention.ms"])
    assert m.topics()["t"].configs == {"segment.bytes": "5000", "cleanup.policy": "compact"}
    assert m.log("t", 0).config["cleanup.policy"] == "compact"
    m.alter_topic_config("t", {"retention.ms": "5"}, replace_all=True)
    assert m.topics()["t"].configs == {"retention.ms": "5"}
    assert m.effective_config("t")["segment.bytes"] == 1073741824
    assert _code(m.alter_topic_config, "t", {"retention.ms": "x"}) == ErrorCode.invalid_config
    m.alter_topic_config("t", {"retention.ms": "7"}, validate_only=True)
    assert m.topics()["t"].configs == {"retention.ms": "5"}


def test_producer_ids_never_repeat_across_restarts(manager_factory):
    m = manager_factory()
    first = [m.allocate_producer_id() for _ in range(3)]
    m.close()
    m2 = manager_factory()
    later = [m2.allocate_producer_id() for _ in range(3)]
    assert len(set(first + later)) == 6 and min(later) > max(first)


def test_maintenance_in_a_thread_while_appending_and_reading(manager_factory, clock):
    m = manager_factory()
    m.create_topic(
        "c",
        1,
        {
            "cleanup.policy": "compact,delete",
            "segment.bytes": "400",
            "min.cleanable.dirty.ratio": "0.01",
            "retention.ms": "-1",
        },
    )
    log = m.log("c", 0)
    stop = threading.Event()
    errors: list[BaseException] = []

    def maintain() -> None:
        try:
            while not stop.is_set():
                m.run_maintenance(clock.now_ms())
                m.flush_dirty()
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=maintain)
    worker.start()
    try:
        for i in range(400):
            log.append(make_batch([(b"k%d" % (i % 10), b"v%d" % i, 1_000 + i)]), 0)
            if i % 25 == 0:
                read_all(log)
    finally:
        stop.set()
        worker.join()
    assert not errors
    m.run_maintenance(clock.now_ms())
    latest = {k: v for _o, k, v, _t in read_all(log)}
    assert latest == {b"k%d" % k: b"v%d" % (390 + k) for k in range(10)}
    assert log.log_end_offset == 400
