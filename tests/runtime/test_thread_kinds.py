"""What differs between the two thread kinds, without a broker or a child process: where a
store read goes when no thread owns the task, and whose record-handler counters count."""

from __future__ import annotations

import pytest

from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.thread.thread import ThreadEnv
from streamrt.runtime.exception_handlers import ErrorStats
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.instance.process_thread import ChildLaunch, ProcessStreamThread
from streamrt.runtime.instance.store_reads import StoreNotReadyError, StoreRead
from streamrt.runtime.instance.threads import ChildThreads, LocalThreads


def _launch() -> ChildLaunch:
    return ChildLaunch("m:app", {}, "a", "web-1", True, emit=lambda *_a, **_k: None)


def test_a_read_of_a_task_no_local_thread_owns_is_not_ready() -> None:
    config = StreamsConfig.from_mapping({"application.id": "a"})
    env = ThreadEnv(config, Topology(), (), "web-1", True, lambda *_a, **_k: None)
    for threads in (LocalThreads(env), ChildThreads(_launch())):
        with pytest.raises(StoreNotReadyError, match="task 0_3 of store counts is not active"):
            threads.read_store("0_3", StoreRead("counts", "k"), timeout=1.0)


def test_child_threads_report_their_childrens_counters_summed() -> None:
    threads = ChildThreads(_launch())
    for index, n in ((1, 2), (2, 3)):
        child = ProcessStreamThread(_launch(), index)
        child.error_counts = ({("processing", "log_and_continue"): n}, {"processing": n})
        threads.by_index[index] = child
    own = ErrorStats()
    stats = threads.error_stats(own)
    assert stats is not own
    assert stats.snapshot() == ({("processing", "log_and_continue"): 5}, {"processing": 5})


def test_a_process_handle_has_nothing_to_persist_and_is_not_committed_before_it_ends() -> None:
    child = ProcessStreamThread(_launch(), 1)
    assert child.persist_stores() == 0
    assert not child.committed.is_set() and not child.stopped_cleanly
