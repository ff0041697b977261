"""The child of ``stream.thread.mode=process`` when its parent is gone (the socket closed)."""

from __future__ import annotations

import socket
import threading
from multiprocessing.connection import Connection
from pathlib import Path

from streamrt.runtime.instance.process_child import _Child


def test_a_send_to_a_gone_parent_stops_the_thread_and_returns(tmp_path: Path) -> None:
    """The first to notice a killed parent may be a status send, not the request reader: it
    must stop the thread and return. Before, it stopped the thread while holding the send
    lock, the stop's own event waited for that lock, and the orphaned child never exited (a
    CI run: both children alive 4 minutes after their parent's SIGKILL)."""
    ours, theirs = socket.socketpair()
    conn = Connection(ours.detach())
    init = {
        "app_spec": "tests.runtime.counting_app:app",
        "settings": {"bootstrap.servers": "127.0.0.1:9", "state.dir": str(tmp_path)},
        "instance_id": "orphan",
        "index": 1,
        "static": True,
    }
    child = _Child(conn, init)
    theirs.close()  # the parent is killed
    sender = threading.Thread(target=child._send, args=(("status", {}),), daemon=True)
    sender.start()
    sender.join(10)
    assert not sender.is_alive(), "the send to a gone parent never returned"
    assert child.thread.stopping
    child._send(("status", {}))  # and later sends return at once too
    conn.close()
