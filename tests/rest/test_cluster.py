"""Three instances x two threads behind their REST endpoints: metadata, queries, scale-down.

Real embedded broker, real runtime instances (in-process Apps with their own state dirs).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from streamrt.cli import main as cli_main
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import TOKEN, get, group_members, owned, running, start_instance, url

pytestmark = pytest.mark.slow

BROKER = {"group.min.session.timeout.ms": "1000", "group.max.session.timeout.ms": "60000"}
SESSION_MS = 20_000


def test_three_instances_metadata_queries_and_scale_down(
    broker_factory: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = broker_factory(BROKER)  # type: ignore[operator]
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "events", 8)
    create_topic(bootstrap, "event-counts-out", 8)
    apps = [
        start_instance(bootstrap, tmp_path, f"web-{i}", session_timeout_ms=SESSION_MS)
        for i in (1, 2, 3)
    ]
    try:
        wait_until(lambda: running(*apps), 60, "three instances running")
        thread_ids = {f"web-{i}-thread-{n}" for i in (1, 2, 3) for n in (1, 2)}
        hosts = {a.config.application_server for a in apps if a.config}

        # -- every instance lists all six thread ids and the three hosts, and agrees with the
        # coordinator's DescribeGroups member by member (once the group settled) -------------
        wait_until(lambda: agrees_with_coordinator(bootstrap, apps), 30, "metadata = coordinator")
        coordinator = group_members(bootstrap)
        assert set(coordinator) == thread_ids
        for app in apps:
            body = get(app, "/v1/instances").json()
            listed = {i["instance_id"]: i for i in body["instances"]}
            assert set(listed) == {"web-1", "web-2", "web-3"}
            assert {i["application_server"] for i in listed.values()} == hosts
            assert {t for i in listed.values() for t in i["group_instance_ids"]} == thread_ids
            assert all(i["state_store_names"] == ["event-counts"] for i in listed.values())
        threads = get(apps[0], "/v1/threads").json()
        assert [t["group_instance_id"] for t in threads] == ["web-1-thread-1", "web-1-thread-2"]
        assert all(t["member_id"] for t in threads)

        # -- interactive queries: answered locally or forwarded to the owner ------------------
        keys = [f"k{i}" for i in range(16)]
        produce(bootstrap, "events", [(k.encode(), b"e") for k in keys * 3])
        want = Counter(k for k in keys * 3)
        remote_seen = 0
        for key in keys:
            owner = apps[0].metadata_for_key("event-counts", key)
            assert owner is not None
            remote_seen += owner.instance_id != "web-1"

            def value(key: str = key) -> object:
                r = get(apps[0], f"/v1/stores/event-counts/keys/{key}")
                return r.status_code == 200 and r.json()["value"] == want[key] and r.json()

            answer = wait_until(value, 30, f"count of {key}")
            assert answer["instance_id"] == owner.instance_id
        assert remote_seen > 0  # some keys were answered by another instance
        metrics = get(apps[0], "/metrics").text
        processed = [
            float(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines()
            if line.startswith('streamrt_records_processed_total{instance_id="web-1"')
        ]
        assert len(processed) == 2 and sum(processed) > 0
        running_line = 'state="RUNNING",thread="web-1-thread-1"} 1.0'
        assert any(line.endswith(running_line) for line in metrics.splitlines())

        # -- bad input: 4xx with a JSON body -------------------------------------------------
        assert get(apps[0], "/v1/stores/nope/keys/k1").status_code == 404
        remove = url(apps[0]) + "/v1/members:remove"
        assert httpx.post(remove, json={"instance_ids": ["x"]}).status_code == 401
        bad = {"Authorization": "Bearer wrong"}
        assert httpx.post(remove, json={"instance_ids": ["x"]}, headers=bad).status_code == 403
        auth = {"Authorization": f"Bearer {TOKEN}"}
        for body in ({"instance_ids": "web-3"}, {"instance_ids": []}, {"ids": ["a"]}):
            r = httpx.post(remove, json=body, headers=auth)
            assert r.status_code == 422 and r.json()
        r = httpx.post(remove, content=b"{not json", headers=auth)
        assert r.status_code == 422

        # -- scale-down: stop web-3 (static: no LeaveGroup); nothing moves for a while ---------
        survivors, gone = apps[:2], apps[2]
        before = owned(*survivors)
        assert len(before) < 8
        gone.stop()
        time.sleep(5)  # well under session.timeout.ms = 20 s
        assert owned(*survivors) == before
        assert set(group_members(bootstrap)) == thread_ids

        # -- remove its ids (unknown ids reported, nothing removed twice); rebalance now -------
        exit_code = cli_main(
            [
                "instances",
                "remove",
                "--url",
                url(apps[0]),
                "--instance",
                "web-3",
                "--group-instance-id",
                "web-3-thread-1",
                "--group-instance-id",
                "web-9-thread-1",
                "--token",
                TOKEN,
            ]
        )
        out = capsys.readouterr().out
        assert exit_code == 3
        assert "web-3-thread-1: removed" in out and "web-3-thread-2: removed" in out
        assert "web-9-thread-1: UNKNOWN_MEMBER_ID" in out
        assert out.count("web-3-thread-1") == 1
        wait_until(lambda: running(*survivors), 15, "survivors own every partition")
        assert set(group_members(bootstrap)) == thread_ids - {"web-3-thread-1", "web-3-thread-2"}

        assert cli_main(["instances", "list", "--url", url(apps[1])]) == 0
        listing = capsys.readouterr().out
        assert "web-1" in listing and "web-3" not in listing
    finally:
        for app in apps:
            app.stop()


def agrees_with_coordinator(bootstrap: str, apps: list[App]) -> bool:
    """Each instance's /v1/instances partitions equal its members' DescribeGroups assignment."""
    coordinator = group_members(bootstrap)
    for app in apps:
        for inst in get(app, "/v1/instances").json()["instances"]:
            ids = inst["group_instance_ids"]
            if any(i not in coordinator for i in ids):
                return False
            from_coordinator = sorted(p for i in ids for p in coordinator[i])
            if sorted(map(tuple, inst["topic_partitions"])) != from_coordinator:
                return False
    return bool(coordinator) and all(coordinator.values())
