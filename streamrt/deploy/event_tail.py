"""EventTail: follows ``<application.id>-events`` in a background thread.

The deploy driver's only view of its instances: readiness ("every thread of pid P is
RUNNING") and the raw material of the report come from the events the runtime publishes.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from streamrt.client_config import ClientConfig
from streamrt.events import ensure_topic, events_topic, security_kwargs

__all__ = ("EventTail",)


class EventTail:
    """``with EventTail(bootstrap, app_id) as tail: tail.wait_for(...)``; ``client``: Kafka
    client properties (TLS, SASL) for a secured cluster."""

    def __init__(
        self, bootstrap: str, application_id: str, client: ClientConfig | None = None
    ) -> None:
        self.bootstrap = bootstrap
        self.client = client
        self.topic = events_topic(application_id)
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="event-tail")
        self.error: BaseException | None = None

    def __enter__(self) -> EventTail:
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError(f"could not start following {self.topic}")
        if self.error is not None:
            raise self.error
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def events(self, predicate: Callable[[dict[str, Any]], bool] | None = None) -> list[Any]:
        with self._lock:
            items = list(self._events)
        return [e for e in items if predicate is None or predicate(e)]

    def thread_states(self, pid: int) -> dict[int, str]:
        """The latest state of each thread of process ``pid``."""
        states: dict[int, str] = {}
        for e in self.events(lambda e: e["pid"] == pid and e["type"] == "thread_state"):
            states[e["thread"]] = e["fields"]["new"]
        return states

    def is_running(self, pid: int, threads: int) -> bool:
        states = self.thread_states(pid)
        return len(states) >= threads and all(s == "RUNNING" for s in states.values())

    def is_settled(self, pids: Sequence[int], protocol: str = "classic") -> bool:
        """Every thread of these processes has completed a rebalance, all at one generation
        (``protocol="streams"``: every task held once, :meth:`_tasks_owned_once`), and none
        of them is owed a second (cooperative) round: the group is done moving. A thread
        RUNNING after the first of two rounds is not settled yet."""
        latest: dict[tuple[int, int], dict[str, Any]] = {}
        for e in self.events(lambda e: e["pid"] in pids and e["type"] == "rebalance_complete"):
            latest[(e["pid"], e["thread"])] = e["fields"]
        if {pid for pid, _thread in latest} != set(pids):
            return False
        if any(f.get("followup") for f in latest.values()):
            return False
        if protocol == "streams":
            return self._tasks_owned_once(pids)
        return len({f.get("generation") for f in latest.values()}) == 1

    def _tasks_owned_once(self, pids: Sequence[int]) -> bool:
        """Every task seen so far is held by exactly one thread of ``pids`` (by its latest
        ``assignment`` event): a streams group's members keep their own epochs (one whose
        tasks did not change is not told of a new group epoch), so that is what settled means
        there."""
        every: set[str] = set()
        latest: dict[tuple[int, int], list[str]] = {}
        for e in self.events(lambda e: e["type"] == "assignment"):
            tasks = [str(t) for t in e["fields"].get("tasks") or ()]
            every.update(tasks)
            if e["pid"] in pids:
                latest[(e["pid"], e["thread"])] = tasks
        held = [t for tasks in latest.values() for t in tasks]
        return len(held) == len(set(held)) and set(held) == every

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> float:
        """Poll ``condition`` every 50 ms; returns the wall time it became true."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return time.time()
            if self.error is not None:
                raise RuntimeError(f"event tail failed: {self.error!r}")
            time.sleep(0.05)
        raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")

    def _run(self) -> None:
        try:
            asyncio.run(self._follow())
        except BaseException as exc:
            self.error = exc
            self._ready.set()

    async def _follow(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.structs import TopicPartition

        await ensure_topic(self.bootstrap, self.topic, self.client)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            fetch_max_wait_ms=50,
            **security_kwargs(self.client, "consumer"),
        )
        await consumer.start()
        try:
            tp = TopicPartition(self.topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            self._ready.set()
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=100)
                parsed = [json.loads(r.value) for recs in batches.values() for r in recs]
                if parsed:
                    with self._lock:
                        self._events.extend(parsed)
        finally:
            await consumer.stop()
