"""``TxnTestContext``: drives the pure transaction coordinator like Kafka's test context does.

Time moves only with :meth:`sleep`; timers fire on ``ManualTimer.poll``; records go to an
in-memory list standing in for ``__transaction_state``; markers the coordinator asks for are
collected and "written" only when a test calls :meth:`write_markers`, so every step between a
decision and its completion can be observed.
"""

from __future__ import annotations

import itertools
from typing import Any

from streamrt.broker.coordination.appender import map_txn_append_error as map_append_error
from streamrt.broker.group.timer import ManualTimer
from streamrt.broker.txn.coordinator import TransactionCoordinator, TxnConfig
from streamrt.broker.txn.records import TxnRecord
from streamrt.broker.txn.result import TxnMarkers, TxnResult
from streamrt.clock import ManualClock
from streamrt.errors import ErrorCode
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

TEST_CONFIG = TxnConfig(max_timeout_ms=900_000, abort_scan_interval_ms=1_000)


class TxnTestContext:
    def __init__(self, config: TxnConfig = TEST_CONFIG, start_ms: int = 1_000_000) -> None:
        self.clock = ManualClock(start_ms)
        self.config = config
        self.log: list[TxnRecord] = []
        self.markers: list[TxnMarkers] = []
        self.fail_next_append: ErrorCode | None = None
        self.known_partitions: set[tuple[str, int]] | None = None
        self._pids = itertools.count(1000)
        self._new_coordinator()
        self.apply(self.coordinator.on_loaded())  # an empty __transaction_state was loaded

    def _new_coordinator(self) -> None:
        self.timer = ManualTimer(self.clock)
        self.coordinator = TransactionCoordinator(
            self.config,
            self.clock,
            self.timer,
            allocate_producer_id=lambda: next(self._pids),
            partition_exists=lambda t, p: (
                self.known_partitions is None or (t, p) in self.known_partitions
            ),
            offsets_partition=lambda group: ("__consumer_offsets", len(group) % 4),
        )

    # -- plumbing -------------------------------------------------------------------------------

    def apply(self, result: TxnResult) -> Any:
        """What the service does: append, call back, collect markers; returns the answer."""
        error = None
        if result.records:
            error, self.fail_next_append = self.fail_next_append, None
            if error is None:
                self.log.extend(result.records)
        response = result.response
        self.markers.extend(result.markers)
        if result.on_append is not None:
            answer = self.apply(
                result.on_append(None if error is None else map_append_error(error))
            )
            response = answer if answer is not None else response
        for step in result.also:
            self.apply(step)
        return response

    def write_markers(self) -> list[TxnMarkers]:
        """Every requested marker lands; the coordinator then writes Complete*."""
        written, self.markers = self.markers, []
        for m in written:
            self.apply(
                self.coordinator.markers_written(
                    m.transactional_id, m.producer_id, m.producer_epoch
                )
            )
        return written

    def sleep(self, ms: int) -> None:
        target = self.clock.now_ms() + ms
        while True:
            deadline = self.timer.next_deadline()
            step_to = target if deadline is None or deadline > target else deadline
            self.clock.advance(step_to - self.clock.now_ms())
            for result in self.timer.poll():
                self.apply(result)
            if step_to == target:
                return

    def restart(self) -> None:
        """A new coordinator replays the log (a broker restart), then resumes."""
        self.markers = []
        self._new_coordinator()
        for record in self.log:
            self.coordinator.replay_bytes(record.key, record.value)
        self.apply(self.coordinator.on_loaded())

    @staticmethod
    def ctx(api_key: int, version: int) -> RequestContext:
        return RequestContext(api_key, version, 1, "client", "/127.0.0.1")

    @staticmethod
    def request(api_key: int, version: int, **fields: Any) -> Any:
        return build(codec_for(api_key, version).request_cls, **fields)

    def state(self, txn_id: str) -> str:
        return self.coordinator.transactions[txn_id].state.wire_name

    # -- requests -------------------------------------------------------------------------------

    def init(
        self,
        txn_id: str = "tx",
        timeout_ms: int = 60_000,
        *,
        version: int = 4,
        pid: int = -1,
        epoch: int = -1,
    ) -> Any:
        req = self.request(
            22,
            version,
            transactional_id=txn_id,
            transaction_timeout=timeout_ms,
            producer_id=pid,
            producer_epoch=epoch,
        )
        return self.apply(self.coordinator.init_producer_id(self.ctx(22, version), req))

    def add_partitions(
        self,
        txn_id: str,
        pid: int,
        epoch: int,
        partitions: dict[str, list[int]] | None = None,
        *,
        version: int = 3,
    ) -> dict[tuple[str, int], ErrorCode]:
        req = self.request(
            24,
            version,
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[
                {"name": t, "partitions": ps} for t, ps in (partitions or {"t": [0]}).items()
            ],
        )
        resp = self.apply(self.coordinator.add_partitions_to_txn(self.ctx(24, version), req))
        return {
            (t.name, r.partition_index): ErrorCode(r.partition_error_code)
            for t in resp.results_by_topic_v3_and_below
            for r in t.results_by_partition
        }

    def add_offsets(
        self, txn_id: str, pid: int, epoch: int, group: str = "g", version: int = 3
    ) -> ErrorCode:
        req = self.request(
            25,
            version,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            group_id=group,
        )
        resp = self.apply(self.coordinator.add_offsets_to_txn(self.ctx(25, version), req))
        return ErrorCode(resp.error_code)

    def end(self, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> ErrorCode:
        req = self.request(
            26,
            version,
            transactional_id=txn_id,
            producer_id=pid,
            producer_epoch=epoch,
            committed=commit,
        )
        resp = self.apply(self.coordinator.end_txn(self.ctx(26, version), req))
        return ErrorCode(resp.error_code)

    def describe(self, *txn_ids: str) -> Any:
        req = self.request(65, 0, transactional_ids=list(txn_ids))
        return self.apply(self.coordinator.describe_transactions(self.ctx(65, 0), req))

    def list(
        self, states: tuple[str, ...] = (), pids: tuple[int, ...] = (), duration: int = -1
    ) -> Any:
        req = self.request(
            66,
            1,
            state_filters=list(states),
            producer_id_filters=list(pids),
            duration_filter=duration,
        )
        return self.apply(self.coordinator.list_transactions(self.ctx(66, 1), req))

    def begin(self, txn_id: str = "tx", timeout_ms: int = 60_000) -> tuple[int, int]:
        """InitProducerId then AddPartitions: an Ongoing transaction; returns (pid, epoch)."""
        resp = self.init(txn_id, timeout_ms)
        assert resp.error_code == ErrorCode.none
        pid, epoch = resp.producer_id, resp.producer_epoch
        assert self.add_partitions(txn_id, pid, epoch) == {("t", 0): ErrorCode.none}
        return pid, epoch
