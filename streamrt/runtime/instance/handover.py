"""The running instance's side of a hand-off: prepare the stores, then stop and commit.

The protocol and the socket are :mod:`streamrt.runtime.instance.handoff`; ``App`` calls these
when a successor asks (``App.prepare_for_handoff`` / ``App.stop_for_handoff``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from streamrt.errors import StreamrtError
from streamrt.runtime.engine.thread.thread import ThreadNotRunningError
from streamrt.runtime.instance.thread_handle import ThreadHandle

__all__ = ("persist_stores", "wait_final_commits")


def persist_stores(threads: Sequence[ThreadHandle]) -> int:
    """Have every running thread write its stores' memory to disk in the background, so the
    stop that follows closes them quickly; returns how many tasks were asked."""
    asked = 0
    for thread in threads:
        try:
            asked += thread.persist_stores()
        except ThreadNotRunningError:
            continue
    return asked


def wait_final_commits(
    threads: Sequence[ThreadHandle],
    timeout: float,
    fatal_error: Callable[[], BaseException | None],
) -> None:
    """Wait until every stopping thread made its final commit; raise if one is late or did
    not stop cleanly, so the successor is told the state is not clean."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.committed.wait(max(0.0, deadline - time.monotonic()))
    late = [t.name for t in threads if not t.committed.is_set()]
    if late:
        raise StreamrtError(f"threads not stopped and committed after {timeout:g}s: {late}")
    unclean = {t.name: str(t.error) for t in threads if not t.stopped_cleanly}
    fatal = fatal_error()  # the instance's, read now: it may have failed meanwhile
    if unclean or fatal is not None:
        raise StreamrtError(f"stopped with an error: {fatal or unclean}")
