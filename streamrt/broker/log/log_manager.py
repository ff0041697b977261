"""The broker's topics and their partition logs on disk: create, delete, reconfigure, maintain.

The server's handlers call this from the event-loop thread; :meth:`LogManager.run_maintenance` and
:meth:`LogManager.flush_dirty` run on a worker thread. The manager's lock guards the topic table;
each :class:`PartitionLog` has its own lock for appends, reads and segment changes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import resource
import threading
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from streamrt.broker.config import BrokerConfig, validate_topic_configs
from streamrt.broker.log.cleaner import clean_log
from streamrt.broker.log.open_files import OpenFiles
from streamrt.broker.log.partition_log import PartitionLog
from streamrt.broker.log.swap import fsync_dir
from streamrt.broker.log.topic_store import (
    ProducerIdAllocator,
    TopicInfo,
    TopicMetadataStore,
    validate_topic_name,
)
from streamrt.clock import Clock, SystemClock
from streamrt.errors import ConfigError, ErrorCode, KafkaError
from streamrt.logs import fields

__all__ = ("LogManager", "TopicInfo")

logger = logging.getLogger(__name__)

_MAX_PARTITIONS = 100_000
_PARTITION_DIR = re.compile(r".+-[0-9]+")
_SYSTEM_CLOCK = SystemClock()


class LogManager:
    """Responsibilities: the topic table (persisted), one :class:`PartitionLog` per partition,
    producer-id allocation, and periodic roll/retention/compaction/flush."""

    def __init__(self, data_dir: Path, config: BrokerConfig, clock: Clock = _SYSTEM_CLOCK) -> None:
        self.data_dir = Path(data_dir)
        self.config = config
        self.clock = clock
        self._lock = threading.RLock()
        self._maintenance_lock = threading.Lock()
        self._topics: dict[str, TopicInfo] = {}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._store: TopicMetadataStore | None = None
        self._producer_ids: ProducerIdAllocator | None = None
        self.files = OpenFiles(
            _open_files_bound(config["log.max.open.files"], config.is_default("log.max.open.files"))
        )

    # ------------------------------------------------------------------------------ lifecycle
    def load(self) -> None:
        """Open every persisted topic's logs (recovering their tails).

        Nothing is deleted here: a partition directory no topic's metadata accounts for (a topic
        deleted just before a crash, or a lost metadata file) is renamed aside as Kafka's stray
        logs are, and a metadata file that cannot be read stops the start-up
        (:class:`CorruptMetadataError`, naming the file)."""
        with self._lock:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._store = TopicMetadataStore(self.data_dir)
            self._producer_ids = ProducerIdAllocator(self.data_dir)
            self._topics = self._store.load_all()
            wanted = {
                self._partition_dir(t.name, p)
                for t in self._topics.values()
                for p in range(t.num_partitions)
            }
            for entry in sorted(self.data_dir.iterdir()):
                if entry.is_dir() and _PARTITION_DIR.fullmatch(entry.name) and entry not in wanted:
                    _set_aside(entry)
            for info in self._topics.values():
                for p in range(info.num_partitions):
                    self._open_log(info, p)
            for log in self._logs.values():
                for producer in log.active_producers():
                    self._producer_ids.skip_past(producer.producer_id)
            logger.info(
                "log manager loaded",
                extra=fields(topics=len(self._topics), partitions=len(self._logs)),
            )

    def close(self) -> None:
        """Close every log. A log that cannot write its index or snapshot (a full disk) is
        logged and skipped: both are rebuilt from the segments at the next start, and the
        records themselves were written before they were acknowledged."""
        with self._lock:
            failed: list[str] = []
            error = ""
            for log in self._logs.values():
                try:
                    log.close()
                except OSError as exc:
                    failed.append(f"{log.topic}-{log.partition}")
                    error = str(exc)
            self._logs.clear()
        if failed:
            logger.warning(
                "could not close partition logs cleanly; they are recovered at next start",
                extra=fields(count=len(failed), first=", ".join(failed[:5]), error=error),
            )

    # ------------------------------------------------------------------------------ topics
    def topics(self) -> Mapping[str, TopicInfo]:
        with self._lock:
            return MappingProxyType(dict(self._topics))

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicInfo:
        """Create ``name``; ``num_partitions == -1`` means the broker's ``num.partitions``."""
        validate_topic_name(name)
        if num_partitions == -1:
            num_partitions = self.config["num.partitions"]
        if not 1 <= num_partitions <= _MAX_PARTITIONS:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"number of partitions must be >= 1, got {num_partitions}",
            )
        overrides = _validated(dict(configs or {}))
        with self._lock:
            if name in self._topics:
                raise KafkaError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
            collision = _collision_name(name)
            for other in self._topics:
                if _collision_name(other) == collision:
                    raise KafkaError(
                        ErrorCode.invalid_topic_exception,
                        f"topic {name!r} collides with existing topic {other!r} ('.' vs '_')",
                    )
            info = TopicInfo(name, uuid.uuid4(), num_partitions, overrides, internal)
            if validate_only:
                return info
            self._require_store().save(info)
            self._topics[name] = info
            for p in range(num_partitions):
                path = self._partition_dir(name, p)
                if path.exists():  # leftover of a topic whose deletion failed: keep it aside
                    _set_aside(path)
                self._open_log(info, p)
            logger.info(
                "created topic", extra=fields(topic=name, partitions=num_partitions, **overrides)
            )
            return info

    def delete_topic(self, name: str) -> None:
        """Remove the metadata first (the commit point), then the partition directories."""
        with self._lock:
            info = self._get_topic(name)
            self._require_store().remove(name)
            del self._topics[name]
            logs = [self._logs.pop((name, p)) for p in range(info.num_partitions)]
        for log in logs:
            try:
                log.delete_files()
            except OSError:
                logger.warning("could not remove partition files", exc_info=True)
        logger.info("deleted topic", extra=fields(topic=name))

    def create_partitions(self, name: str, new_total: int, *, validate_only: bool = False) -> None:
        with self._lock:
            info = self._get_topic(name)
            if new_total <= info.num_partitions:
                raise KafkaError(
                    ErrorCode.invalid_partitions,
                    f"topic {name!r} has {info.num_partitions} partitions; {new_total} is not more",
                )
            if new_total > _MAX_PARTITIONS:
                raise KafkaError(
                    ErrorCode.invalid_partitions, f"{new_total} partitions is too many"
                )
            if validate_only:
                return
            updated = dataclasses.replace(info, num_partitions=new_total)
            self._require_store().save(updated)
            self._topics[name] = updated
            for p in range(info.num_partitions, new_total):
                self._open_log(updated, p)

    def alter_topic_config(
        self,
        name: str,
        set_: Mapping[str, str],
        delete: Iterable[str] = (),
        *,
        replace_all: bool = False,
        validate_only: bool = False,
    ) -> None:
        """Incremental (``set_``/``delete``) or, with ``replace_all``, legacy AlterConfigs."""
        with self._lock:
            info = self._get_topic(name)
            deleted = list(delete)
            unknown = [k for k in deleted if k not in self.config.topic_defaults()]
            if unknown:
                raise KafkaError(ErrorCode.invalid_config, f"unknown topic config {unknown[0]!r}")
            overrides = {} if replace_all else dict(info.configs)
            overrides.update(_validated(dict(set_)))
            for key in deleted:
                overrides.pop(key, None)
            if validate_only:
                return
            updated = dataclasses.replace(info, configs=overrides)
            self._require_store().save(updated)
            self._topics[name] = updated
            effective = self.config.effective_topic_config(overrides)
            for p in range(info.num_partitions):
                self._logs[(name, p)].update_config(effective)

    def effective_config(self, name: str) -> dict[str, Any]:
        with self._lock:
            return self.config.effective_topic_config(self._get_topic(name).configs)

    def log(self, topic: str, partition: int) -> PartitionLog:
        with self._lock:
            log = self._logs.get((topic, partition))
        if log is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"unknown partition {topic}-{partition}"
            )
        return log

    def skip_producer_ids_through(self, producer_id: int) -> None:
        """Never allocate ``producer_id`` or a lower id (one the transaction log holds)."""
        with self._lock:
            if self._producer_ids is None:
                raise RuntimeError("LogManager.load() was not called")
            self._producer_ids.skip_past(producer_id)

    def allocate_producer_id(self) -> int:
        with self._lock:
            if self._producer_ids is None:
                raise RuntimeError("LogManager.load() was not called")
            return self._producer_ids.allocate()

    # ------------------------------------------------------------------------------ maintenance
    def run_maintenance(self, now_ms: int) -> None:
        """Roll by time, apply retention, compact, and expire idle producer state.

        Runs on a worker thread; one failing log is logged and does not stop the others.
        """
        with self._maintenance_lock:
            with self._lock:
                logs = list(self._logs.values())
            expiration = self.config["producer.id.expiration.ms"]
            for log in logs:
                try:
                    log.roll_if_due(now_ms)
                    log.apply_retention(now_ms)
                    clean_log(log, now_ms)
                    log.expire_producers(now_ms, expiration)
                except Exception:
                    logger.exception(
                        "log maintenance failed",
                        extra=fields(topic=log.topic, partition=log.partition),
                    )

    def flush_dirty(self) -> None:
        """fsync every log with unflushed appends; one that fails goes offline (logged), the
        others are still flushed."""
        with self._lock:
            logs = [log for log in self._logs.values() if log.dirty]
        for log in logs:
            with contextlib.suppress(KafkaError):
                log.flush()

    # ------------------------------------------------------------------------------ helpers
    def _get_topic(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"unknown topic {name!r}")
        return info

    def _partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def _open_log(self, info: TopicInfo, partition: int) -> None:
        self._logs[(info.name, partition)] = PartitionLog.open(
            self._partition_dir(info.name, partition),
            info.name,
            partition,
            self.config.effective_topic_config(info.configs),
            self.config["streamrt.log.fsync"],
            self.files,
        )
        if self.config["streamrt.log.fsync"] == "always":
            fsync_dir(self.data_dir)

    def _require_store(self) -> TopicMetadataStore:
        if self._store is None:
            raise RuntimeError("LogManager.load() was not called")
        return self._store


def _validated(configs: dict[str, str]) -> dict[str, str]:
    try:
        return validate_topic_configs(configs)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.invalid_config, str(exc)) from None


def _set_aside(path: Path) -> None:
    """Rename an unaccounted-for partition directory to ``<dir>.<uuid>-stray`` (Kafka's name
    for stray logs); the operator decides whether to delete it."""
    stray = path.with_name(f"{path.name}.{uuid.uuid4().hex}-stray")
    os.rename(path, stray)
    fsync_dir(path.parent)
    logger.warning(
        "partition directory has no topic metadata: kept aside, not loaded",
        extra=fields(path=str(path), moved_to=str(stray)),
    )


def _open_files_bound(configured: int, default: bool) -> int:
    """``log.max.open.files``, capped at half the process's descriptor limit so sockets and
    index files always have room (a warning only if the operator set the larger value)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or configured <= soft // 2:
        return configured
    bound = max(soft // 2, 1)
    logger.log(
        logging.INFO if default else logging.WARNING,
        "log.max.open.files is above half the descriptor limit (ulimit -n); using half",
        extra=fields(configured=configured, ulimit=soft, used=bound),
    )
    return bound


def _collision_name(name: str) -> str:
    return name.replace(".", "_")
