"""The hand-off socket's path: a state directory too deep for a Unix socket still hands off."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from streamrt.runtime.instance.handoff import HandoffError, HandoffServer, ping, socket_path


def _deep(root: Path) -> Path:
    deep = root / ("d" * 60) / ("e" * 60) / "app"
    deep.mkdir(parents=True)
    return deep


def test_a_short_state_dir_keeps_the_socket_beside_the_state(tmp_path: Path) -> None:
    short = Path("/tmp") / f"sr-{os.getpid()}"
    assert socket_path(short) == short / ".handoff.sock"


def test_a_deep_state_dir_gets_a_private_stand_in_both_sides_agree_on(tmp_path: Path) -> None:
    deep = _deep(tmp_path)
    path = socket_path(deep)
    assert len(os.fsencode(str(path))) <= 107 < len(os.fsencode(str(deep / ".handoff.sock")))
    assert path == socket_path(Path(str(deep) + "/"))  # the successor computes the same one
    assert socket_path(_deep(tmp_path / "other")) != path
    folder = path.parent
    assert folder.stat().st_uid == os.getuid()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_running_instance_answers_on_a_deep_state_dir(tmp_path: Path) -> None:
    path = socket_path(_deep(tmp_path))
    server = HandoffServer(
        path, instance_id="web-1", fingerprint="f", release=dict, on_done=lambda ok: None
    )
    server.start()
    try:
        assert ping(path)["instance_id"] == "web-1"
    finally:
        server.close()


def test_a_stand_in_folder_others_can_enter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    (tmp_path / "t" / f"streamrt-{os.getuid()}").mkdir(mode=0o777)
    os.chmod(tmp_path / "t" / f"streamrt-{os.getuid()}", 0o777)
    with pytest.raises(HandoffError, match="mode 0700"):
        socket_path(_deep(tmp_path))
