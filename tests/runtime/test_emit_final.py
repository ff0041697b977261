"""KIP-825 emit-final (``emit_strategy="on_window_close"``) across a restart: the last emit's
close time is kept in ``<store>-emit-final`` (Kafka keeps it in the commit metadata), so a
window emitted before the restart is not emitted again and none is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.runtime import TimeWindows, Windowed
from streamrt.state import IN_MEMORY
from tests.runtime.test_windows import Driver, windowed_count


@pytest.mark.parametrize("in_memory", [False, True])
def test_emit_final_survives_a_restart_without_duplicates(tmp_path: Path, in_memory: bool) -> None:
    kw = {"default_store": IN_MEMORY} if in_memory else {}
    app = windowed_count(TimeWindows.of_size_with_no_grace(10), emit_strategy="on_window_close")
    d = Driver(app, tmp_path, **kw)
    d.pipe("a", 1)
    d.pipe("b", 2)
    d.pipe("a", 10)  # [0, 10) closes: by window start, then key bytes
    assert d.out() == [(Windowed("a", 0, 10), 1), (Windowed("b", 0, 10), 1)]
    d.pipe("a", 15)
    d.restart(restore_changelog=in_memory)
    d.pipe("b", 16)  # [0, 10) is still in the store, but was emitted before the restart
    assert d.out() == []
    d.pipe("c", 20)
    assert d.out() == [(Windowed("a", 10, 20), 2), (Windowed("b", 10, 20), 1)]
    d.task.close()
