"""Structured logging for operators: ``key=value`` text or one JSON object per line.

Pass structured fields with ``logger.info("msg", extra={"fields": {...}})``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ("configure_logging", "fields", "log_format")


def fields(**kv: Any) -> dict[str, Any]:
    """``extra=fields(group="g", generation=3)`` attaches structured fields to a log record."""
    return {"fields": kv}


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        base = f"{ts}.{int(record.msecs):03d}Z {record.levelname} {record.name}: "
        base += record.getMessage()
        kv = getattr(record, "fields", None)
        if kv:
            base += " " + " ".join(f"{k}={v}" for k, v in kv.items())
        if record.exc_info:
            base += "\n" + self.formatException(record.exc_info)
        return base


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": record.created,
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at emit time, not the stream it was created with:
    a caller that swaps stderr (pytest's capture, a daemoniser) and closes the old one must not
    turn every later log line into 'I/O operation on closed file'."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


_format = ["text"]


def log_format() -> str:
    """The format :func:`configure_logging` last chose (a child process logs the same way)."""
    return _format[0]


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Route every logger to stderr in the chosen format (``text`` or ``json``)."""
    _format[0] = "json" if fmt == "json" else "text"
    handler = _StderrHandler()
    handler.setFormatter(_JsonFormatter() if fmt == "json" else _TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("aiokafka", "kafka", "py4j", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
