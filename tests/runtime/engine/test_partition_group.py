"""PartitionGroup without a broker: timestamp order across partitions, max.task.idle.ms."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.runtime import App
from streamrt.runtime.engine.tasks.partition_group import MAX_TASK_IDLE_DISABLED, PartitionGroup
from streamrt.runtime.engine.tasks.task_inputs import TaskInputs
from streamrt.runtime.exception_handlers import RecordFailedError
from streamrt.testing import TopologyTestDriver


@dataclass(frozen=True)
class Rec:
    topic: str
    offset: int
    timestamp: int
    key: bytes | None = b"k"
    value: bytes | None = b"v"
    headers: tuple[tuple[str, bytes], ...] = ()


def recs(topic: str, *stamps: int) -> list[Rec]:
    return [Rec(topic, i, ts) for i, ts in enumerate(stamps)]


def caught_up(*partitions: str, idle: int = 0) -> PartitionGroup[str]:
    group: PartitionGroup[str] = PartitionGroup(dict.fromkeys(partitions), idle)
    for p in partitions:
        group.set_lag(p, 0)
    return group


def drain(group: PartitionGroup[str], now: int = 0) -> list[tuple[str, int]]:
    out = []
    while group.ready(now):
        taken = group.next_record()
        assert taken is not None
        out.append((taken[0], taken[1].timestamp))
    return out


def test_smallest_head_timestamp_first_and_each_partition_in_offset_order() -> None:
    group = caught_up("a", "b")
    group.add("a", recs("a", 1, 5, 3, 9))
    group.add("b", recs("b", 2, 4, 10))
    # b's head (2) < a's next head (5); a's 3 stays behind its 5 (a partition is never reordered)
    assert drain(group) == [
        ("a", 1),
        ("b", 2),
        ("b", 4),
        ("a", 5),
        ("a", 3),
        ("a", 9),
        ("b", 10),
    ]
    assert group.stream_time == 10


def test_equal_heads_go_in_the_order_the_partitions_got_data() -> None:
    group = caught_up("a", "b")
    group.add("b", recs("b", 7))
    group.add("a", recs("a", 7))
    assert drain(group) == [("b", 7), ("a", 7)]


def test_idle_zero_waits_while_an_empty_partition_may_have_data() -> None:
    group: PartitionGroup[str] = PartitionGroup({"a": None, "b": None}, max_task_idle_ms=0)
    group.add("a", recs("a", 1))
    assert not group.ready(0)  # b's lag unknown: wait for its first fetch
    group.set_lag("b", 3)
    assert not group.ready(0)  # b has data on the broker: wait for it
    group.set_lag("b", 0)
    assert group.ready(0)  # b is caught up: process a (enforced)
    assert group.enforced_processing == 1


def test_positive_idle_waits_that_long_for_a_caught_up_partition() -> None:
    group = caught_up("a", "b", idle=100)
    group.add("a", recs("a", 1))
    assert not group.ready(1_000)  # b empty since 1_000: the deadline is 1_100
    assert not group.ready(1_099)
    assert group.ready(1_100)
    # data on b ends b's idling; a empties once its record is taken: a new deadline for a
    group.add("b", recs("b", 2))
    assert group.ready(1_200)
    assert drain(group, 1_200) == [("a", 1)]
    assert not group.ready(1_299)
    assert drain(group, 1_300) == [("b", 2)]


def test_idle_disabled_never_waits() -> None:
    group: PartitionGroup[str] = PartitionGroup({"a": None, "b": None}, MAX_TASK_IDLE_DISABLED)
    assert not group.ready(0)  # nothing buffered
    group.add("a", recs("a", 4))
    assert group.ready(0)  # b's lag unknown, yet no wait
    assert drain(group) == [("a", 4)]


def test_all_partitions_buffered_needs_no_lag() -> None:
    group: PartitionGroup[str] = PartitionGroup({"a": None, "b": None}, max_task_idle_ms=10_000)
    group.add("a", recs("a", 4))
    group.add("b", recs("b", 3))
    assert group.ready(0)
    assert group.enforced_processing == 0


def test_heads_are_extracted_once_with_the_partition_time() -> None:
    seen: list[tuple[int, int]] = []

    def extract(record: Any, partition_time: int) -> int | None:
        seen.append((record.offset, partition_time))
        return int(record.timestamp) * 10

    group: PartitionGroup[str] = PartitionGroup({"a": extract})
    group.add("a", recs("a", 3, 1, 5))
    taken = [group.next_record() for _ in range(3)]
    assert [t[2] for t in taken if t is not None] == [30, 10, 50]
    assert seen == [(0, -1), (1, 30), (2, 30)]


def test_clear_drops_everything_buffered() -> None:
    group: PartitionGroup[str] = PartitionGroup({"a": None, "b": None})
    group.add("a", recs("a", 1, 2))
    group.clear()
    assert group.buffered == 0
    assert group.next_record() is None


# -- a thread's TaskInputs: real tasks, a lag reader instead of a consumer -------------------


def join_app() -> App:
    app = App({"application.id": "pg"})
    left = app.stream("left", key_serde="str", value_serde="str")
    table = app.table("right", key_serde="str", value_serde="str")
    left.join(table, lambda lv, rv: f"{lv}+{rv}").to("out", value_serde="str")
    return app


def test_task_inputs_wait_for_a_lagging_partition(tmp_path: Any) -> None:
    from tests.runtime.test_task import ListCollector, make_task

    collector = ListCollector()
    task = make_task(join_app(), 0, 0, tmp_path, collector)
    task.open()
    lags: dict[KafkaTP, int | None] = {}

    async def lag(partition: KafkaTP) -> int | None:
        return lags.get(partition)

    inputs = TaskInputs(0, lag)
    inputs.open(task)
    left, right = KafkaTP("left", 0), KafkaTP("right", 0)
    inputs.add(task, left, [Rec("left", 0, 5, b"a", b"L")])
    lags[left], lags[right] = 0, 1  # the table's record is on the broker, not fetched yet
    asyncio.run(inputs.update_lags())
    assert inputs.process(0) == 0
    inputs.add(task, right, [Rec("right", 0, 1, b"a", b"R")])
    lags[right] = 0
    asyncio.run(inputs.update_lags())
    assert inputs.process(0) == 2  # the table's older record first: the join finds it
    assert collector.to("out") == [(b"a", b"L+R")]
    task.close()


def test_records_an_open_task_already_took_are_dropped_until_it_is_opened_again(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A consumer that hands a partition's records out again (it went back without the task
    being closed) must not have them counted twice; a task closed and opened again (a lost
    transaction's rewind) takes them again."""
    from tests.runtime.test_task import ListCollector, make_task

    collector = ListCollector()
    task = make_task(join_app(), 0, 0, tmp_path, collector)
    task.open()
    inputs = TaskInputs(-1)
    inputs.open(task)
    left = KafkaTP("left", 0)
    inputs.add(task, left, [Rec("left", o, 5, b"a", f"L{o}".encode()) for o in range(3)])
    assert inputs.process(0) == 3
    with caplog.at_level("WARNING"):
        again = [Rec("left", o, 5, b"a", f"L{o}".encode()) for o in range(1, 5)]
        assert inputs.add(task, left, again)
    assert inputs.process(0) == 2  # offsets 3 and 4 only
    assert inputs.records_taken_again == 2
    assert "input went back" in caplog.text
    inputs.close("0_0")
    inputs.open(task)
    inputs.add(task, left, [Rec("left", 0, 5, b"a", b"L0")])
    assert inputs.process(0) == 1
    task.close()


def test_driver_with_positive_idle_waits_for_the_wall_clock() -> None:
    with TopologyTestDriver(join_app(), {"max.task.idle.ms": 100}) as driver:
        left = driver.create_input_topic("left", "str", "str")
        right = driver.create_input_topic("right", "str", "str")
        out = driver.create_output_topic("out", "str", "str")
        right.pipe_input("a", "R", timestamp=1)  # left is empty (caught up): wait 100 ms
        assert driver.stream_time() == -1
        left.pipe_input("a", "L", timestamp=5)  # both buffered: R (ts 1) goes first ...
        assert driver.stream_time() == 1
        assert out.is_empty()  # ... then right is empty again and L waits
        driver.advance_wall_clock_time(100)
        assert out.read_key_values_to_list() == [("a", "L+R")]
        left.pipe_input("a", "L2", timestamp=6)  # right's deadline has passed: no wait
        assert out.read_key_values_to_list() == [("a", "L2+R")]


def one_input_app() -> App:
    app = App({"application.id": "app"})
    app.stream("left", key_serde="str", value_serde="str").map_values(str.upper).to("out")
    return app


@pytest.mark.parametrize("app", [join_app, one_input_app], ids=["two-inputs", "one-input"])
def test_a_stop_ends_a_processing_run_early_and_leaves_the_rest_buffered(
    tmp_path: Any, app: Any
) -> None:
    """A stopping thread (a stop, a hand-off) does not process a whole poll's worth first: the
    run ends at the next check once ``stopping`` says so, the task's position is that of the
    last record it processed (what the stop's commit covers), and the rest stays buffered."""
    from streamrt.runtime.engine.tasks.task_inputs import STOP_CHECK_RECORDS
    from tests.runtime.test_task import ListCollector, make_task

    task = make_task(app(), 0, 0, tmp_path, ListCollector())
    task.open()
    inputs = TaskInputs(-1)
    inputs.open(task)
    left = KafkaTP("left", 0)
    inputs.add(task, left, [Rec("left", o, 5, b"a", b"L") for o in range(100)])
    assert inputs.process(0, lambda: True) == STOP_CHECK_RECORDS
    assert task.positions[("left", 0)] == STOP_CHECK_RECORDS
    assert inputs.buffered("0_0") == 100 - STOP_CHECK_RECORDS
    assert inputs.process(0) == 100 - STOP_CHECK_RECORDS  # not stopping: the rest
    assert task.positions[("left", 0)] == 100
    task.close()


def test_a_one_partition_group_hands_its_records_over_at_once() -> None:
    """The usual task (one input, the records' own timestamps) takes a poll's records as one
    list: those not processed go back in order ahead of newer ones, and stream time moves by
    the records taken only."""
    group: PartitionGroup[str] = PartitionGroup({"a": None})
    assert group.own_time_single
    group.add("a", recs("a", 4, 9, 2, 7))
    records = group.take_all()
    assert [r.timestamp for r in records] == [4, 9, 2, 7] and group.buffered == 0
    group.taken(records, 1)  # a stop after the first: 9, 2, 7 wait
    assert group.stream_time == 4 and group.buffered == 3
    group.add("a", [Rec("a", 4, 8)])
    again = group.take_all()
    assert [r.offset for r in again] == [1, 2, 3, 4]
    group.taken(again, 4)
    assert group.stream_time == 9 and group.buffered == 0
    extracted: PartitionGroup[str] = PartitionGroup({"a": lambda r, _t: r.timestamp})
    assert not extracted.own_time_single  # a custom extractor: heads extracted one by one
    assert not PartitionGroup({"a": None, "b": None}).own_time_single


def test_a_record_that_fails_is_taken_and_the_rest_stays_buffered(tmp_path: Any) -> None:
    """A processing failure (the handler said FAIL) propagates out of the run: the failing
    record counts as taken, the ones after it wait in order for whoever processes next."""
    from tests.runtime.test_task import ListCollector, make_task

    def upper_or_fail(value: str) -> str:
        if value == "bad":
            raise ValueError("bad record")
        return value.upper()

    app = App({"application.id": "app"})
    app.stream("left", key_serde="str", value_serde="str").map_values(upper_or_fail).to("out")
    collector = ListCollector()
    task = make_task(app, 0, 0, tmp_path, collector)
    task.open()
    inputs = TaskInputs(-1)
    inputs.open(task)
    left = KafkaTP("left", 0)
    values = [b"x", b"bad", b"y", b"z"]
    inputs.add(task, left, [Rec("left", o, 5, b"a", v) for o, v in enumerate(values)])
    with pytest.raises(RecordFailedError):
        inputs.process(0)
    assert inputs.buffered("0_0") == 2
    assert [v for _t, _k, v, *_ in collector.sent] == [b"X"]
    task.close()
