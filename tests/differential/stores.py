"""Processor-API stores on the streamrt side (issue 38), mirroring ``runner/.../StoreOps.java``:
the store an ``addStateStore`` node declares (``streamrt.runtime.Stores``), the built-in
processor that writes each record into it, and a ``read`` step's answer through the driver's
store access, printed as the Java side prints it (lists, windows as ``[key, start, end, v]``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from streamrt.runtime import Processor, StoreBuilder, Stores, ValueAndTimestamp, Windowed
from streamrt.testing import TopologyTestDriver

STR, JSON = "str", "json"


def builder(s: dict[str, Any]) -> StoreBuilder:
    """The store of ``{"op": "addStateStore", "store": s}``."""
    name, kind, persistent = s["name"], s["type"], s.get("persistent", True)
    if kind in ("keyValue", "timestampedKeyValue"):
        supplier = (
            Stores.persistent_key_value_store(name)
            if persistent
            else Stores.in_memory_key_value_store(name)
        )
        make = (
            Stores.key_value_store_builder
            if kind == "keyValue"
            else Stores.timestamped_key_value_store_builder
        )
        b = make(supplier, STR, JSON)
    elif kind == "window":
        args = (name, s["retention_ms"], s["size_ms"])
        supplier = (
            Stores.persistent_timestamped_window_store(*args)
            if persistent
            else Stores.in_memory_window_store(*args)
        )
        b = Stores.timestamped_window_store_builder(supplier, STR, JSON)
    elif kind == "session":
        make_session = (
            Stores.persistent_session_store if persistent else Stores.in_memory_session_store
        )
        b = Stores.session_store_builder(make_session(name, s["retention_ms"]), STR, JSON)
    elif kind == "versioned":
        supplier = Stores.persistent_versioned_key_value_store(name, s["history_ms"])
        b = Stores.versioned_key_value_store_builder(supplier, STR, JSON)
    else:
        raise ValueError(f"unknown store type {kind}")
    return b.with_caching_enabled() if s.get("caching") else b


class Put(Processor):
    """Writes each record into its store, as the Java runner's ``StoreOps.Put``."""

    def __init__(self, store: str, kind: str) -> None:
        self.store_name = store
        self.kind = kind

    def process(self, key: Any, value: Any) -> None:
        store: Any = self.context.get_store(self.store_name)
        ts = self.context.timestamp
        if self.kind == "keyValue":
            store.put(key, value)
        elif self.kind == "timestampedKeyValue":
            store.put(key, None if value is None else ValueAndTimestamp(value, ts))
        elif self.kind == "versioned":
            store.put(key, value, ts)
        elif self.kind == "window":
            store.put(key, None if value is None else ValueAndTimestamp(value, ts), ts)
        else:
            store.put(Windowed(key, ts, ts), value)


def _plain(value: Any) -> Any:
    if isinstance(value, ValueAndTimestamp):
        return [value.value, value.timestamp]
    return value


def _kvs(rows: Iterable[tuple[Any, Any]]) -> list[Any]:
    out: list[Any] = []
    for key, value in rows:
        if isinstance(key, Windowed):
            out.append([key.key, key.start, key.end, value])
        else:
            out.append([key, value])
    return out


def _kv_read(s: Any, method: str, step: dict[str, Any], stamped: bool) -> Any:
    def rows(found: Iterable[tuple[Any, Any]]) -> list[Any]:
        if not stamped:
            return _kvs(found)
        # a timestamped store's rows with their timestamps, as getTimestampedKeyValueStore
        return [[k, _plain(s.get_with_timestamp(k))] for k, _v in found]

    if method == "get":
        return _plain(s.get_with_timestamp(step["key"]) if stamped else s.get(step["key"]))
    if method == "range":
        return rows(s.range(step.get("from"), step.get("to")))
    if method == "reverseRange":
        return rows(s.reverse_range(step.get("from"), step.get("to")))
    if method == "all":
        return rows(s.all())
    if method == "reverseAll":
        return rows(s.reverse_all())
    if method == "prefixScan":
        return rows(s.prefix_scan(step["prefix"]))
    raise ValueError(f"unknown key-value read {method}")


def _window_read(s: Any, method: str, step: dict[str, Any]) -> Any:
    lo, hi = step.get("from_ms", 0), step.get("to_ms", 0)

    def stamped(rows: list[tuple[Windowed, Any]]) -> list[Any]:
        return [[w.key, w.start, w.end, [v, s.get_timestamped(w).timestamp]] for w, v in rows]

    if method in ("fetch", "backwardFetch"):
        found = s.fetch_timestamped(step["key"], lo, hi)
        if method == "backwardFetch":
            found = found[::-1]
        return [[w.start, [w.value, w.timestamp]] for w in found]
    if method == "fetchRange":
        return stamped(s.fetch_range(step.get("key_from"), step.get("key_to"), lo, hi))
    if method == "backwardFetchRange":
        return stamped(s.backward_fetch_range(step.get("key_from"), step.get("key_to"), lo, hi))
    if method == "fetchAll":
        return stamped(s.fetch_all(lo, hi))
    if method == "backwardFetchAll":
        return stamped(s.backward_fetch_all(lo, hi))
    if method == "all":
        return stamped(s.all())
    if method == "backwardAll":
        return stamped(s.backward_all())
    raise ValueError(f"unknown window read {method}")


def _session_read(s: Any, method: str, step: dict[str, Any]) -> Any:
    key = step["key"]
    if method == "fetchSession":
        return s.fetch_session(key, step["start"], step["end"])
    find = s.find_sessions if method == "findSessions" else s.backward_find_sessions
    found = find(key, step.get("earliest_end", 0), step.get("latest_start", 0))
    return [[key, w.start, w.end, w.value] for w in found]


def read(driver: TopologyTestDriver, step: dict[str, Any], kind: str) -> Any:
    """A ``{"read": store, "method": ...}`` step's answer."""
    s = driver.get_state_store(step["read"])
    method = step["method"]
    if kind in ("keyValue", "timestampedKeyValue"):
        return _kv_read(s, method, step, kind == "timestampedKeyValue")
    if kind == "window":
        return _window_read(s, method, step)
    if kind == "session":
        return _session_read(s, method, step)
    found = s.get_as_of(step["key"], step["as_of"]) if method == "getAsOf" else None
    if method != "getAsOf":
        found = s.get_with_timestamp(step["key"])
    return None if found is None else [found.value, found.timestamp]
