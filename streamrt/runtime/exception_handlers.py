"""Exception handlers for one record: deserialization, processing (user code) and production.

Kafka Streams lets a record that cannot be read, processed or written either fail the stream
thread or be skipped; KIP-1034 adds a dead-letter topic. The same three stages are configured
here with Kafka Streams' names (``default.deserialization.exception.handler``,
``processing.exception.handler``, ``production.exception.handler``) and one of
``fail``/``continue``/``dlq`` (or Kafka's class names), or a Python callable returning
:class:`HandlerResponse`. A FAIL raises :class:`RecordFailedError`, which kills the thread; the
app's supervisor then backs off and gives up on a record that keeps failing (see ``App``).
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Protocol

from streamrt.errors import ConfigError
from streamrt.logs import fields

__all__ = (
    "DEAD_LETTER_HEADER_PREFIX",
    "ErrorContext",
    "ErrorStats",
    "HandlerResponse",
    "RecordErrorHandlers",
    "RecordFailedError",
    "Stage",
    "parse_handler",
)

logger = logging.getLogger(__name__)

DEAD_LETTER_HEADER_PREFIX = "__streams.errors."  # KIP-1034's header names


class Stage(StrEnum):
    DESERIALIZATION = "deserialization"
    PROCESSING = "processing"
    PRODUCTION = "production"


class HandlerResponse(Enum):
    """What a user handler returns (Kafka's ``DeserializationHandlerResponse`` & co.)."""

    CONTINUE = "continue"
    FAIL = "fail"


FAIL, CONTINUE, DLQ = "fail", "continue", "dlq"

_NAMES: dict[str, str] = {
    "fail": FAIL,
    "log_and_fail": FAIL,
    "logandfailexceptionhandler": FAIL,
    "logandfailprocessingexceptionhandler": FAIL,
    "defaultproductionexceptionhandler": FAIL,
    "continue": CONTINUE,
    "log_and_continue": CONTINUE,
    "logandcontinueexceptionhandler": CONTINUE,
    "logandcontinueprocessingexceptionhandler": CONTINUE,
    "dlq": DLQ,
    "dead_letter_queue": DLQ,
}

UserHandler = Callable[["ErrorContext", BaseException], Any]
HandlerSpec = str | UserHandler


def parse_handler(key: str, value: object) -> HandlerSpec:
    """``fail``/``continue``/``dlq`` (or a Kafka class name, with or without package), or a
    callable; anything else is refused naming the key."""
    if callable(value):
        return value
    if isinstance(value, str):
        name = value.strip().rsplit(".", 1)[-1].lower()
        if name in _NAMES:
            return _NAMES[name]
    raise ConfigError(
        f"{key} must be fail, continue or dlq (or LogAndFailExceptionHandler, "
        f"LogAndContinueExceptionHandler, log_and_fail, log_and_continue, or a callable), "
        f"got {value!r}"
    )


@dataclass(slots=True)
class ErrorContext:
    """The record that failed and where: what a user handler sees and the DLQ headers carry."""

    stage: Stage
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None  # the raw source bytes
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    task_id: str = ""
    node: str | None = None  # the processor (or sink) that failed

    @property
    def record_id(self) -> str:
        return f"{self.topic}-{self.partition}@{self.offset}"


class RecordFailedError(Exception):
    """A record failed and its handler said FAIL: the stream thread stops on it."""

    def __init__(self, context: ErrorContext, cause: BaseException, handler: str) -> None:
        super().__init__(
            f"{context.stage.value} of {context.record_id} failed "
            f"(task {context.task_id}{', node ' + context.node if context.node else ''}, "
            f"{handler}): {type(cause).__name__}: {cause}"
        )
        self.context = context
        self.cause = cause
        self.handler = handler


class ErrorStats:
    """Counters the metrics endpoint reads; shared by the threads of one app."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skipped: dict[tuple[str, str], int] = {}
        self._dead_lettered: dict[str, int] = {}

    def skipped(self, stage: Stage, handler: str) -> None:
        with self._lock:
            key = (stage.value, handler)
            self._skipped[key] = self._skipped.get(key, 0) + 1

    def dead_lettered(self, stage: Stage) -> None:
        with self._lock:
            self._dead_lettered[stage.value] = self._dead_lettered.get(stage.value, 0) + 1

    def snapshot(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """(records skipped per (stage, handler), records dead-lettered per stage)."""
        with self._lock:
            return dict(self._skipped), dict(self._dead_lettered)


class DeadLetterSink(Protocol):
    """Where a DLQ record goes: the task's record collector."""

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None: ...


def dead_letter_headers(
    context: ErrorContext, exc: BaseException, handler: str
) -> list[tuple[str, bytes]]:
    """The source headers, then KIP-1034's error headers (UTF-8) and the handler's name."""
    p = DEAD_LETTER_HEADER_PREFIX
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    details = {
        "exception": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "exception.message": str(exc),
        "exception.stacktrace": trace,
        "topic": context.topic,
        "partition": str(context.partition),
        "offset": str(context.offset),
        "stage": context.stage.value,
        "handler": handler,
    }
    return [*context.headers, *((p + k, v.encode()) for k, v in details.items())]


@dataclass(slots=True)
class RecordErrorHandlers:
    """The three handlers of an app, the dead-letter topic and the counters they feed."""

    deserialization: HandlerSpec = FAIL
    processing: HandlerSpec = FAIL
    production: HandlerSpec = FAIL
    dead_letter_topic: str | None = None
    stats: ErrorStats = field(default_factory=ErrorStats)

    def __post_init__(self) -> None:
        for stage in Stage:
            if getattr(self, stage.value) == DLQ and not self.dead_letter_topic:
                raise ConfigError(
                    f"{stage.value} exception handler dlq needs "
                    "errors.deadletterqueue.topic.name (the dead-letter topic)"
                )

    def handle(
        self, context: ErrorContext, exc: BaseException, sink: DeadLetterSink | None
    ) -> None:
        """Return to skip the record; raise :class:`RecordFailedError` to fail the thread."""
        spec = getattr(self, context.stage.value)
        handler = spec if isinstance(spec, str) else getattr(spec, "__name__", "callable")
        if callable(spec):
            try:
                response = spec(context, exc)
            except Exception as handler_exc:  # a throwing handler fails the record
                raise RecordFailedError(context, handler_exc, f"{handler} raised") from exc
            action = CONTINUE if response is HandlerResponse.CONTINUE else FAIL
        else:
            action = spec
        if action == FAIL:
            raise RecordFailedError(context, exc, f"{context.stage.value} handler {handler}")
        to_dlq = self.dead_letter_topic is not None and action in (DLQ, CONTINUE)
        if to_dlq and isinstance(spec, str) and sink is not None:
            assert self.dead_letter_topic is not None
            sink.send(
                self.dead_letter_topic,
                context.key,
                context.value,
                None,
                context.timestamp,
                headers=dead_letter_headers(context, exc, handler),
            )
            self.stats.dead_lettered(context.stage)
        self.stats.skipped(context.stage, handler)
        logger.warning(
            "skipping a record" + (" (sent to the dead-letter topic)" if to_dlq else ""),
            extra=fields(
                stage=context.stage.value,
                handler=handler,
                topic=context.topic,
                partition=context.partition,
                offset=context.offset,
                task=context.task_id,
                node=context.node,
                error=f"{type(exc).__name__}: {exc}",
            ),
        )
