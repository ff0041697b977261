"""The whole application for the console: every instance's view, fetched concurrently.

Instances come from StreamsMetadata (the group's assignment), so an instance that stopped but
is still a member (a static member within its session timeout) is listed and shown ``down``:
each request has its own timeout, and one slow or dead instance never holds up the answer.
The partition map is built here, not in the browser: one row per partition number, one
column per stream thread, each cell the tasks of that partition the thread holds.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from streamrt.runtime.instance.metadata import StreamsMetadata

__all__ = ("assemble", "fetch_views")


async def _fetch(client: httpx.AsyncClient, m: StreamsMetadata, wait_s: float) -> dict[str, Any]:
    base = {"instance_id": m.instance_id, "application_server": f"{m.host}:{m.port}"}
    if not m.host:
        return {**base, "status": "down", "error": "no application.server", "threads": []}
    try:
        response = await client.get(f"http://{m.host}:{m.port}/v1/tasks", timeout=wait_s)
        body = response.json()
        if response.status_code != 200 or not isinstance(body, dict):
            raise ValueError(f"HTTP {response.status_code}")
    except (httpx.HTTPError, ValueError) as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        down = [_unknown_thread(i) for i in m.thread_instance_ids]
        return {**base, "status": "down", "error": error, "threads": down, "tasks": list(m.tasks)}
    return {**body, **base}


def _unknown_thread(thread_id: str) -> dict[str, Any]:
    return {
        "thread_name": thread_id,
        "group_instance_id": thread_id,
        "state": "UNKNOWN",
        "tasks": [],
    }


async def fetch_views(
    others: list[StreamsMetadata], local: dict[str, Any], wait_s: float
) -> list[dict[str, Any]]:
    """The local view plus each other instance's ``/v1/tasks``, in instance id order."""
    async with httpx.AsyncClient() as client:
        remote = await asyncio.gather(*(_fetch(client, m, wait_s) for m in others))
    return sorted([local, *remote], key=lambda v: str(v["instance_id"]))


def _partition_of(task: str) -> int:
    return int(task.rsplit("_", 1)[1]) if "_" in task else -1


def _rows(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for view in views:
        for thread in view.get("threads", []):
            for task in thread.get("tasks", []):
                cell = rows.setdefault(_partition_of(task["task"]), {})
                cell.setdefault(thread["thread_name"], []).append(task)
        if view.get("status") == "down":  # the assignment's tasks, thread unknown
            for task in view.get("tasks", []):
                cell = rows.setdefault(_partition_of(task), {})
                entry = {"task": task, "role": "unknown", "lag": None}
                cell.setdefault(f"{view['instance_id']}?", []).append(entry)
    return [{"partition": p, "cells": rows[p]} for p in sorted(rows)]


def _history(views: list[dict[str, Any]]) -> dict[str, Any]:
    """Every instance's task series on one time grid (the union of their sample times)."""
    times = sorted({t for v in views for t in (v.get("history") or {}).get("t", [])})
    index = {t: i for i, t in enumerate(times)}
    series: list[dict[str, Any]] = []
    for view in views:
        history = view.get("history") or {}
        own = history.get("t", [])
        for _key, s in sorted((history.get("tasks") or {}).items()):
            lag: list[Any] = [None] * len(times)
            rate: list[Any] = [None] * len(times)
            for i, t in enumerate(own):
                lag[index[t]], rate[index[t]] = s["lag"][i], s["rate"][i]
            series.append({"label": f"{s['task']} @ {s['thread']}", "lag": lag, "rate": rate})
    return {"t": times, "series": series}


def assemble(application_id: str, local_id: str, views: list[dict[str, Any]]) -> dict[str, Any]:
    columns = [
        {"instance_id": v["instance_id"], "thread": t["thread_name"], "status": v["status"]}
        for v in views
        for t in v.get("threads", [])
    ]
    columns += [
        {"instance_id": v["instance_id"], "thread": f"{v['instance_id']}?", "status": "down"}
        for v in views
        if v.get("status") == "down" and v.get("tasks")
    ]
    instances = [{k: val for k, val in v.items() if k != "history"} for v in views]
    return {
        "application_id": application_id,
        "local_instance_id": local_id,
        "ts": time.time(),
        "instances": instances,
        "columns": columns,
        "rows": _rows(views),
        "history": _history(views),
    }
