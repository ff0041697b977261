"""The bound on open segment files (``log.max.open.files``, issue 42): descriptors are opened
lazily, the least recently used is closed first, one in use is never closed under its user, and
a log reads the right bytes whatever was evicted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from streamrt.broker.log.open_files import OpenFiles
from tests.broker.log.conftest import ManagerFactory, read_all, value_batch


def _fds_under(directory: Path) -> int:
    """Descriptors of this process open on files under ``directory``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(str(directory))
    return count


def test_lru_closes_the_least_recently_used_and_never_a_pinned_one(tmp_path: Path) -> None:
    files = OpenFiles(2)
    paths = [tmp_path / f"f{i}" for i in range(4)]
    for i, p in enumerate(paths):
        p.write_bytes(b"%d" % i)
    a, b, c, d = (files.handle(p) for p in paths)
    assert len(files) == 0  # nothing opened until used
    with a.use() as fd_a:
        with b.use(), c.use():  # three pinned: the bound is exceeded, nothing closed
            assert len(files) == 3
            assert os.pread(fd_a, 1, 0) == b"0"
        with d.use() as fd_d:  # b and c unpinned: b (least recent) goes, then c
            assert os.pread(fd_d, 1, 0) == b"3"
            assert len(files) == 2
        assert os.pread(fd_a, 1, 0) == b"0"  # still a's file
    with b.use() as fd_b:  # evicted earlier: opened again, closing a (now unpinned)
        assert os.pread(fd_b, 1, 0) == b"1"
    assert files.opened == 5
    d.close()
    assert len(files) == 1
    assert _fds_under(tmp_path) == 1


def test_many_partitions_keep_at_most_the_bound_open(
    manager_factory: ManagerFactory, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    m = manager_factory({"log.max.open.files": "8", "log.segment.bytes": "1024"})
    m.create_topic("wide", 50)
    for round_ in range(3):
        for p in range(50):
            m.log("wide", p).append(value_batch(round_, size=600), 1_000)
    assert _fds_under(data) <= 8
    m.close()
    m2 = manager_factory({"log.max.open.files": "8"})
    assert _fds_under(data) <= 8
    for p in range(50):
        values = [v for _o, _k, v, _t in read_all(m2.log("wide", p))]
        assert values == [b"%d-" % r + b"x" * 600 for r in range(3)]
    assert _fds_under(data) <= 8
    assert len(m2.log("wide", 0).segments) == 3  # rolled: several segments per partition


_OUT_OF_DESCRIPTORS = """
import os, resource, sys
from pathlib import Path
from streamrt.broker.log.open_files import OpenFiles
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
files = OpenFiles(1000)  # a bound above the limit: the process runs out first
root = Path(sys.argv[1])
handles = []
for i in range(200):
    path = root / f"f{i}"
    path.write_bytes(b"%d" % i)
    handles.append(files.handle(path))
for i, h in enumerate(handles):
    with h.use() as fd:
        assert os.pread(fd, 8, 0) == b"%d" % i
print("read", len(handles), "files with", len(files), "open")
"""


def test_out_of_descriptors_closes_an_idle_file_instead_of_failing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _OUT_OF_DESCRIPTORS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("read 200 files with")


def test_closing_a_file_in_use_waits_for_its_user(tmp_path: Path) -> None:
    """Retention may delete a segment the cleaner is reading on another thread."""
    path = tmp_path / "seg"
    path.write_bytes(b"data")
    files = OpenFiles(4)
    h = files.handle(path)
    with h.use() as fd:
        h.close()
        path.unlink()
        assert os.pread(fd, 4, 0) == b"data"  # still the reader's file
    assert len(files) == 0
    assert _fds_under(tmp_path) == 0
