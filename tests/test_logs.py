"""Operator logging: structured fields in both formats, and a handler that survives a swapped
and closed stderr (pytest's capture does this to every in-process CLI test)."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from streamrt.logs import configure_logging, fields


def test_json_lines_carry_the_structured_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    configure_logging("INFO", "json")
    logging.getLogger("streamrt.test").info("joined", extra=fields(group="g", generation=3))
    line = json.loads(out.getvalue().splitlines()[-1])
    assert (line["msg"], line["group"], line["generation"]) == ("joined", "g", 3)


def test_logging_goes_to_the_current_stderr_after_the_old_one_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("INFO", "text")
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("streamrt.test").warning("still logged", extra=fields(node=1))
    assert "WARNING streamrt.test: still logged node=1" in second.getvalue()
