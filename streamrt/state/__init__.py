"""State stores (a bytes-level contract; RocksDB and in-memory implementations), the per-task
state manager that owns them with their changelog partitions, checkpoint hints and dir locks."""

from streamrt.state.checkpoint import read_checkpoint_hint, write_checkpoint_hint
from streamrt.state.lock import DirectoryLock, StateLockedError
from streamrt.state.manager import TopicPartition, StateManager, make_store
from streamrt.state.memory import InMemoryStore
from streamrt.state.rocksdb import RocksDBStore
from streamrt.state.store import IN_MEMORY, ROCKS_DB, KeyValueStore, StoreKind
from streamrt.state.window_store import SegmentedStore, SegmentSpec, WindowEntry

__all__ = (
    "IN_MEMORY",
    "ROCKS_DB",
    "TopicPartition",
    "DirectoryLock",
    "InMemoryStore",
    "KeyValueStore",
    "RocksDBStore",
    "SegmentSpec",
    "SegmentedStore",
    "WindowEntry",
    "StateLockedError",
    "StateManager",
    "StoreKind",
    "make_store",
    "read_checkpoint_hint",
    "write_checkpoint_hint",
)
