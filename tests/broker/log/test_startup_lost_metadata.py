"""Small metadata files beside the logs that go missing or get damaged (review6): the broker
must neither hand out a producer id the logs still remember (its first batch would be answered
as a duplicate and dropped) nor resurrect records DeleteRecords removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.broker.log.topic_store import CorruptMetadataError
from tests.broker.log.conftest import ManagerFactory, make_batch, read_all, value_batch


def _idempotent(value: bytes, producer_id: int) -> bytes:
    return make_batch(
        [(None, value, 1_000)], producer_id=producer_id, producer_epoch=0, base_sequence=0
    )


@pytest.mark.parametrize("damage", ["deleted", "rewound"])
def test_producer_ids_stay_above_those_the_logs_remember(
    manager_factory: ManagerFactory, tmp_path: Path, damage: str
) -> None:
    block = tmp_path / "data" / "meta" / "producer-id-block.json"
    m = manager_factory()
    m.create_topic("t", 1)
    pid = m.allocate_producer_id()
    m.log("t", 0).append(_idempotent(b"first", pid), 1_000)
    m.close()
    if damage == "deleted":
        block.unlink()
    else:  # an older copy of the file, from before this producer's block was reserved
        block.write_text('{"next_block_start": 0}')
    m2 = manager_factory()
    new_pid = m2.allocate_producer_id()
    info = m2.log("t", 0).append(_idempotent(b"second", new_pid), 1_000)
    assert not info.duplicate
    assert [r[2] for r in read_all(m2.log("t", 0))] == [b"first", b"second"]
    assert new_pid > pid


@pytest.mark.parametrize("content", [b"", b"12\x00garbage", b"-5"])
def test_damaged_log_start_offset_is_refused_not_reset(
    manager_factory: ManagerFactory, tmp_path: Path, content: bytes
) -> None:
    """Reading it as 0 would serve the records DeleteRecords removed again."""
    m = manager_factory()
    m.create_topic("t", 1)
    for i in range(5):
        m.log("t", 0).append(value_batch(i), 1_000)
    assert m.log("t", 0).delete_records_before(3) == 3
    m.close()
    path = tmp_path / "data" / "t-0" / "log-start-offset"
    path.write_bytes(content)
    with pytest.raises(CorruptMetadataError) as err:
        manager_factory()
    assert str(path) in str(err.value)
    assert path.read_bytes() == content


def test_committed_compaction_swap_without_its_plan_is_refused(
    manager_factory: ManagerFactory, tmp_path: Path
) -> None:
    """A crash in the swap's last step leaves the cleaned segment only as ``.log.swap`` (the
    old one already deleted); with ``cleaner-swap.json`` lost, deleting it as a leftover would
    delete the only copy of those records."""
    m = manager_factory()
    m.create_topic("t", 1, {"segment.bytes": "300"})
    for i in range(8):
        m.log("t", 0).append(value_batch(i), 1_000)
    m.close()
    directory = tmp_path / "data" / "t-0"
    first = sorted(directory.glob("*.log"))[0]
    swap = first.with_name(first.name + ".swap")
    first.rename(swap)
    content = swap.read_bytes()
    with pytest.raises(CorruptMetadataError) as err:
        manager_factory()
    assert str(directory / "cleaner-swap.json") in str(err.value)
    assert swap.read_bytes() == content


def test_damaged_compaction_swap_plan_is_refused(
    manager_factory: ManagerFactory, tmp_path: Path
) -> None:
    m = manager_factory()
    m.create_topic("t", 1, {"segment.bytes": "300"})
    for i in range(8):
        m.log("t", 0).append(value_batch(i), 1_000)
    m.close()
    directory = tmp_path / "data" / "t-0"
    first = sorted(directory.glob("*.log"))[0]
    swap = first.with_name(first.name + ".swap")
    first.rename(swap)
    plan = directory / "cleaner-swap.json"
    plan.write_bytes(b'{"new_base": 0, "old_ba')
    with pytest.raises(CorruptMetadataError) as err:
        manager_factory()
    assert str(plan) in str(err.value)
    assert swap.exists() and plan.exists()
