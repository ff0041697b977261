"""State stores: RocksDB with the changelog offset in the data's WriteBatch, and dir locks."""

from streamrt.state.lock import DirectoryLock, StateLockedError
from streamrt.state.rocksdb import RocksDBStore

__all__ = ("DirectoryLock", "RocksDBStore", "StateLockedError")
