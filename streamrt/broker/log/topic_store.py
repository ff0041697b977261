"""Durable topic metadata and the producer-id high-water mark, as small JSON files.

Layout under the data directory (partition data lives in ``<topic>-<partition>/`` like Kafka)::

    meta/topics/<topic>.json     name, topic id, partition count, config overrides, internal flag
    meta/producer-id-block.json  first producer id not yet handed out in any block

Each file is replaced atomically (temp file, fsync, rename, fsync directory), so a crash leaves
either the old or the new version.
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from pathlib import Path

from streamrt.broker.log.swap import write_atomically
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("ProducerIdAllocator", "TopicInfo", "TopicMetadataStore", "validate_topic_name")

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249


@dataclasses.dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    configs: dict[str, str]  # topic-level overrides only
    internal: bool


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: legal characters, length, not ``.``/``..``."""
    if not name:
        raise KafkaError(ErrorCode.invalid_topic_exception, "topic name is empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.invalid_topic_exception, f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters",
        )
    if not _LEGAL_NAME.fullmatch(name):
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_', '-'",
        )


class TopicMetadataStore:
    """Reads and writes ``meta/topics/*.json``."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / "meta" / "topics"
        self.directory.mkdir(parents=True, exist_ok=True)

    def load_all(self) -> dict[str, TopicInfo]:
        out: dict[str, TopicInfo] = {}
        for path in self.directory.glob("*.json"):
            doc = json.loads(path.read_text())
            info = TopicInfo(
                name=doc["name"],
                topic_id=uuid.UUID(doc["topic_id"]),
                num_partitions=int(doc["num_partitions"]),
                configs={str(k): str(v) for k, v in doc["configs"].items()},
                internal=bool(doc["internal"]),
            )
            out[info.name] = info
        return out

    def save(self, info: TopicInfo) -> None:
        doc = {
            "name": info.name,
            "topic_id": str(info.topic_id),
            "num_partitions": info.num_partitions,
            "configs": info.configs,
            "internal": info.internal,
        }
        write_atomically(self._path(info.name), json.dumps(doc, indent=1).encode())

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}.json"


class ProducerIdAllocator:
    """Hands out producer ids that never repeat across restarts.

    Ids are reserved in blocks: the end of the current block is persisted before any id of it
    is returned, and a restart starts after it (unused ids of the old block are skipped).
    """

    BLOCK_SIZE = 1000

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "meta" / "producer-id-block.json"
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._next = self._read_high_water()
        self._block_end = self._next

    def _read_high_water(self) -> int:
        try:
            return int(json.loads(self._path.read_text())["next_block_start"])
        except FileNotFoundError:
            return 0

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + self.BLOCK_SIZE
            write_atomically(self._path, json.dumps({"next_block_start": self._block_end}).encode())
        pid = self._next
        self._next += 1
        return pid
