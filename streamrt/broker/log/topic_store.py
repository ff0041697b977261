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
from typing import Any

from streamrt.broker.log.storage_errors import CorruptMetadataError
from streamrt.broker.log.swap import write_atomically
from streamrt.errors import ErrorCode, KafkaError

__all__ = (
    "CorruptMetadataError",
    "ProducerIdAllocator",
    "TopicInfo",
    "TopicMetadataStore",
    "validate_topic_name",
)

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
        """Every topic's metadata; :class:`CorruptMetadataError` for the first bad file."""
        out: dict[str, TopicInfo] = {}
        for path in sorted(self.directory.glob("*.json")):
            info = _parse_topic(path, _read_json(path))
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
        if not self._path.exists():
            return 0
        doc = _read_json(self._path)
        value = doc.get("next_block_start")
        if type(value) is not int or value < 0:
            raise CorruptMetadataError(self._path, f"next_block_start is {value!r}")
        return value

    def skip_past(self, producer_id: int) -> None:
        """Never hand out ``producer_id`` or a lower id: a partition still remembers it, so
        after a lost or rewound file its reuse would make the new producer's first batches
        look like duplicates of the old ones, acknowledged and dropped."""
        if producer_id >= self._next:
            self._next = self._block_end = producer_id + 1

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + self.BLOCK_SIZE
            write_atomically(self._path, json.dumps({"next_block_start": self._block_end}).encode())
        pid = self._next
        self._next += 1
        return pid


def _read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or :class:`CorruptMetadataError` saying why not."""
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptMetadataError(path, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise CorruptMetadataError(path, f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise CorruptMetadataError(path, f"expected a JSON object, got {type(doc).__name__}")
    return doc


def _parse_topic(path: Path, doc: dict[str, Any]) -> TopicInfo:
    """Check every field, so a damaged file is reported here rather than misread."""

    def bad(problem: str) -> CorruptMetadataError:
        return CorruptMetadataError(path, problem)

    missing = sorted({"name", "topic_id", "num_partitions", "configs", "internal"} - doc.keys())
    if missing:
        raise bad(f"missing field(s) {', '.join(missing)}")
    name, configs = doc["name"], doc["configs"]
    if not isinstance(name, str) or f"{name}.json" != path.name:
        raise bad(f"name {name!r} does not match the file name")
    try:
        topic_id = uuid.UUID(str(doc["topic_id"]))
    except ValueError:
        raise bad(f"topic_id {doc['topic_id']!r} is not a UUID") from None
    partitions = doc["num_partitions"]
    if type(partitions) is not int or partitions < 1:
        raise bad(f"num_partitions is {partitions!r}, expected an integer >= 1")
    if not isinstance(configs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in configs.items()
    ):
        raise bad("configs is not an object of strings")
    if not isinstance(doc["internal"], bool):
        raise bad(f"internal is {doc['internal']!r}, expected true or false")
    return TopicInfo(name, topic_id, partitions, dict(configs), doc["internal"])
