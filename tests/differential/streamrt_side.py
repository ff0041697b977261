"""Run a scenario through ``streamrt.testing.TopologyTestDriver`` and list what came out.

Every output record is an :class:`Event` tagged with the index of the input step after which
it came out; topics are drained in name order after each step, as the Java runner does. An
exception (building the topology or at a step) ends the run with an error event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamrt.testing import TopologyTestDriver
from tests.differential import stores
from tests.differential.topology import JSON, STR, WIRE_SUFFIX, Built, build

# Kafka Streams' record cache off, as in the Java runner.
DRIVER_CONFIG = {"statestore.cache.max.bytes": 0}


@dataclass(frozen=True)
class Event:
    """One output record (or an error) after input step ``step`` (-1: building)."""

    step: int
    topic: str | None = None
    key: Any = None
    value: Any = None
    ts: int | None = None
    error: str | None = None

    def describe(self) -> str:
        if self.error is not None:
            return f"step {self.step}: error {self.error}"
        return f"step {self.step}: {self.topic} {self.key!r} -> {self.value!r} @ {self.ts}"

    def same(self, other: Event) -> bool:
        """Equal records, or errors at the same step (messages differ between languages)."""
        if self.error is not None or other.error is not None:
            return self.step == other.step and (self.error is None) == (other.error is None)
        return self == other


def _error(step: int, exc: BaseException) -> Event:
    return Event(step, error=f"{type(exc).__name__}: {exc}")


def _printed(built: Built) -> list[str]:
    """The lines print nodes wrote since the last call (the runner's topic "stdout")."""
    if built.printed is None:
        return []
    lines = built.printed.getvalue().splitlines()
    built.printed.seek(0)
    built.printed.truncate()
    return [line for line in lines if line]


def _key(key: Any) -> Any:
    """A key as compared: raw bytes (a windowed-key topic) as hex, as the runner writes them."""
    return key.hex() if isinstance(key, bytes) else key


def run(scenario: dict[str, Any]) -> list[Event]:
    """The events streamrt's driver produces for ``scenario``."""
    app_id = "diff-" + "".join(c if c.isalnum() else "_" for c in scenario["name"])
    try:
        built = build(scenario["topology"])
        driver = TopologyTestDriver(built.builder, {"application.id": app_id, **DRIVER_CONFIG})
    except Exception as exc:  # the scenario's finding: reported as a difference
        return [_error(-1, exc)]
    events: list[Event] = []
    with driver:
        inputs = {t: driver.create_input_topic(t, STR, JSON) for t in sorted(built.inputs)}
        outputs = {
            t: driver.create_output_topic(t, "bytes" if t.endswith(WIRE_SUFFIX) else STR, JSON)
            for t in sorted(built.outputs)
        }
        for step, spec in enumerate(scenario["steps"]):
            try:
                if "read" in spec:  # a processor-API store read through the driver
                    kind = built.store_types[spec["read"]]
                    answer = stores.read(driver, spec, kind)
                    events.append(Event(step, f"store:{spec['read']}", spec["method"], answer, 0))
                    continue
                if "advance_ms" in spec:
                    driver.advance_wall_clock_time(spec["advance_ms"])
                else:
                    inputs[spec["pipe"]].pipe_input(
                        spec.get("key"), spec.get("value"), timestamp=spec["ts"]
                    )
            except Exception as exc:
                events.append(_error(step, exc))
                return events
            for topic, out in outputs.items():
                events.extend(
                    Event(step, topic, _key(r.key), r.value, r.timestamp)
                    for r in out.read_records_to_list()
                )
            events.extend(Event(step, "stdout", None, line, 0) for line in _printed(built))
    return events
