"""The supervisor's backoff and failure key, without a broker: how thread deaths are grouped,
how long a replacement waits, when the instance gives up, and that a stream thread process
reports the same key a thread would (computed once, by the same function)."""

from __future__ import annotations

import inspect

from streamrt.runtime import App, StreamsBuilder
from streamrt.runtime.exception_handlers import ErrorContext, RecordFailedError, Stage
from streamrt.runtime.instance.process_child import _error_info
from streamrt.runtime.instance.process_thread import _child_error
from streamrt.runtime.instance.supervisor import RestartBackoff, failure_key


def _record_error(offset: int) -> RecordFailedError:
    context = ErrorContext(Stage.PROCESSING, "in", 0, offset, 0, b"k", b"v", task_id="0_0")
    return RecordFailedError(context, ValueError("bad"), "fail")


def test_deaths_on_one_record_share_a_key_and_other_records_do_not() -> None:
    assert failure_key(_record_error(7)) == failure_key(_record_error(7))
    assert failure_key(_record_error(7)) != failure_key(_record_error(8))
    assert failure_key(RuntimeError("x")) == "error RuntimeError: x"


def test_a_child_reports_the_key_a_thread_would_have() -> None:
    error = _record_error(7)
    reported = _child_error(_error_info(error))
    assert reported is not None
    assert failure_key(reported) == failure_key(error) == "record in-0@7"


def test_backoff_doubles_up_to_the_max_then_gives_up() -> None:
    backoff = RestartBackoff(max_attempts=4, backoff_ms=100, backoff_max_ms=300)
    delays = [backoff.failed("k", now=float(i)).delay_ms for i in range(5)]
    assert delays == [100, 200, 300, 300, None]
    assert backoff.failed("other", now=4.0).delay_ms == 100  # keys count apart


def test_a_failure_long_after_the_last_starts_a_new_series() -> None:
    backoff = RestartBackoff(max_attempts=1, backoff_ms=100, backoff_max_ms=1000)
    assert backoff.failed("k", now=0.0).delay_ms == 100
    assert backoff.failed("k", now=1.0).delay_ms is None  # within 4 x max: the same series
    assert backoff.failed("k", now=100.0).count == 1  # quiet for > 60 s: counted afresh


def test_a_replacements_start_is_not_quiet_time() -> None:
    """With a short max backoff, deaths seconds apart (a replacement's join and restore on a
    loaded machine) stay one series: the thread is replaced at most max-attempts times."""
    backoff = RestartBackoff(max_attempts=2, backoff_ms=100, backoff_max_ms=200)
    counts = [backoff.failed("k", now=t) for t in (0.0, 2.0, 5.0)]
    assert [a.delay_ms for a in counts] == [100, 200, None]
    backoff = RestartBackoff(max_attempts=1, backoff_ms=1_000, backoff_max_ms=30_000)
    assert backoff.failed("k", now=0.0).delay_ms == 1_000
    assert backoff.failed("k", now=100.0).delay_ms is None  # the default's 4 x 30 s = 120 s
    assert backoff.failed("k", now=300.0).count == 1


def test_app_dsl_methods_are_the_builders_with_its_signature() -> None:
    app = App({"application.id": "a"})
    assert inspect.signature(app.table) == inspect.signature(StreamsBuilder().table)
    app.stream("in").to("out")
    assert app.topology is app.builder.topology and app.topology.nodes
