"""The child of ``stream.thread.mode=process`` when its parent is gone (the socket closed)."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from streamrt.runtime.instance.process_child import _Child
from streamrt.runtime.instance.process_thread import child_pythonpath
from tests.kafka_helpers import create_topic


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


def _queued(sock: socket.socket) -> int:
    """Bytes the child sent that we have not read yet."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def test_sigterm_while_a_status_send_blocks_still_stops_the_child(broker, tmp_path: Path) -> None:
    """SIGTERM runs its handler on the child's main thread, which may be inside a status send
    (holding the send lock) that waits for a busy parent to read. Before, the handler stopped
    the thread right there: the stop's own event waited for that lock, held by the same
    thread, so the child neither stopped nor sent anything again. Real child process, real
    embedded broker; the child's socket buffer is made small so its sends block soon."""
    for topic in ("events", "event-counts-out", "counting-event-counts-changelog"):
        create_topic(broker.bootstrap, topic, 1)  # the parent App creates internal topics
    ours, theirs = socket.socketpair()
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    module = "streamrt.runtime.instance.process_child"
    proc = subprocess.Popen(
        [sys.executable, "-m", module, str(theirs.fileno())], pass_fds=(theirs.fileno(),), env=env
    )
    theirs.close()
    conn = Connection(os.dup(ours.fileno()))
    try:
        conn.send(
            {
                "app_spec": "tests.runtime.counting_app:app",
                "settings": {"bootstrap.servers": broker.bootstrap, "state.dir": str(tmp_path)},
                "instance_id": "blocked",
                "index": 1,
                "static": True,
            }
        )
        assert conn.poll(60) and conn.recv() == ("ready",)
        conn.send(("go",))
        running = False
        deadline = time.monotonic() + 60
        while not running and time.monotonic() < deadline:  # read until the thread runs
            if conn.poll(1):
                message = conn.recv()
                running = message[0] == "status" and message[1]["tasks"] == ["0_0"]
        assert running, "the child's thread never ran its task"
        # read nothing more: the child's sends fill the buffer, then its status send blocks
        queued, since = -1, time.monotonic()
        while time.monotonic() - since < 2.0 and time.monotonic() < deadline:
            now = _queued(ours)
            if now != queued:
                queued, since = now, time.monotonic()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        exited = None
        deadline = time.monotonic() + 60
        while exited is None and time.monotonic() < deadline:  # read again, as a parent would
            if conn.poll(1):
                message = conn.recv()
                if message[0] == "exit":
                    exited = message
        assert exited is not None, "the child never stopped after SIGTERM"
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        conn.close()
        ours.close()
