"""streamrt as people install it: the wheel and sdist are whole, and the installed package,
outside the checkout, runs ``streamrt demo`` and ``streamrt run`` (issue 41).

The wheel is built from the sdist (``python -m build``, no build isolation: no network, the
test extra has setuptools, wheel and build), from a copy of the checkout, so the checkout is
not written to. It is installed with ``--no-deps`` into a fresh venv whose dependencies come
from this venv's site-packages through a ``.pth`` line: a fresh install of every dependency
(librdkafka, RocksDB, FastAPI...) would take minutes and need the network, and a venv made
``--system-site-packages`` from this venv's interpreter would see the *base* Python's
packages, not this venv's. A ``.pth`` line adds the directory only: the editable install's
own ``.pth`` hook in it does not run, so ``streamrt`` (and anything ``apps``) can come only
from the wheel, which the tests check.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import create_topic, produce, read_all, wait_until

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
_CACHES = shutil.ignore_patterns(
    ".venv*", ".git", "*_cache", ".hypothesis", "__pycache__", "*.egg-info"
)
# the checkout's run-time leftovers (``streamrt/state`` is a package: only these paths)
_LEFTOVERS = {"build", "dist", "state", "bench/results", "spark-warehouse", "metastore_db"}


def _not_sources(directory: str, names: list[str]) -> set[str]:
    rel = Path(directory).relative_to(REPO)
    leftovers = {n for n in names if (rel / n).as_posix() in _LEFTOVERS}
    return set(_CACHES(directory, names)) | leftovers


# What the demo, ``streamrt run`` of the bundled examples and the CLI need from the package.
SHIPPED = (
    "streamrt/py.typed",
    "streamrt/examples/sessions.py",
    "streamrt/examples/session_profiles.py",
    "streamrt/examples/wordcount.py",
    "streamrt/rest/static/index.html",
    "streamrt/dev/maven/apache-kafka-pom.xml",  # streamrt dev kafka, streamrt demo --kafka apache
    "streamrt/spark/maven/spark-kafka-pom.xml",  # Spark's Kafka connector (streamrt report)
)
HELLO_APP = """\
from streamrt.runtime import App

app = App({"application.id": "hello"})
(
    app.stream("names", key_serde="str", value_serde="str")
    .map_values(lambda name: f"hello, {name}!")
    .to("greetings", key_serde="str", value_serde="str")
)
"""


def _clean_env() -> dict[str, str]:
    """This process's environment without PYTHONPATH and VIRTUAL_ENV."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path
    sdist: Path
    scratch: Path  # outside the checkout: the working directory of every command

    def env(self) -> dict[str, str]:
        """No PYTHONPATH: nothing of the checkout may leak in."""
        env = _clean_env()
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=self.scratch,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=_not_sources)
    dist = root / "dist"
    # No PYTHONPATH (Spark sessions in this worker set one to the checkout): with it, pip below
    # found ``streamrt`` "already satisfied" and installed nothing (CI, -n 3, 1 run in 1)
    clean = _clean_env()
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
        env=clean,
    )
    wheel = next(dist.glob("streamrt-*.whl"))
    sdist = next(dist.glob("streamrt-*.tar.gz"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
         "--no-index", "--ignore-installed", str(wheel)],
        check=True, capture_output=True, timeout=300, env=clean,
    )  # fmt: skip
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # the dependencies: this venv's site-packages, after the new venv's own
    Path(site, "project-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    scratch = root / "scratch"
    scratch.mkdir()
    yield Installed(venv, wheel, sdist, scratch)


def test_the_wheel_and_sdist_ship_what_the_cli_runs(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    assert set(SHIPPED) <= names, sorted(set(SHIPPED) - names)
    assert not [n for n in names if n.startswith(("apps/", "tests/"))]
    with tarfile.open(installed.sdist) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert set(SHIPPED) <= members, sorted(set(SHIPPED) - members)
    where = installed.run(
        "python", "-c", "import streamrt, streamrt.examples.sessions as s; print(streamrt.__file__)"
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(str(installed.venv)), where.stdout  # the wheel, not the checkout
    assert installed.run("python", "-c", "import apps").returncode != 0


def test_installed_streamrt_demo_runs_to_its_report(installed: Installed) -> None:
    sizes = ["--users", "300", "--instances", "2", "--threads", "1", "--partitions", "2"]
    sizes += ["--rate", "50", "--restart-delay", "0", "--session-timeout-ms", "45000"]
    skip = ["--static-only", "--no-handoff", "--no-eos", "--console-port", "-1"]
    done = installed.run(
        "streamrt", "demo", *sizes, *skip, "--work-dir", str(installed.scratch / "demo"),
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "== streamrt static: rolling deploy report ==" in done.stdout
    assert re.search(r"^correctness +OK: 300/300 users exact", done.stdout, re.M), done.stdout


def test_installed_streamrt_runs_an_app_file_and_the_bundled_example(
    installed: Installed, broker: BrokerThread
) -> None:
    """A ten-line app in a scratch directory (``streamrt run hello:app``) and the bundled word
    count (``streamrt run streamrt.examples.wordcount:app``), side by side on one broker."""
    for topic in ("names", "greetings", "text-input", "word-counts"):
        create_topic(broker.bootstrap, topic, 1)
    (installed.scratch / "hello.py").write_text(HELLO_APP)
    produce(broker.bootstrap, "names", [(b"1", b"ada"), (b"2", b"grace")])
    produce(broker.bootstrap, "text-input", [(None, b"the cat saw the dog")])
    procs = [
        _start(installed, broker, "hello:app"),
        _start(installed, broker, "streamrt.examples.wordcount:app"),
    ]
    try:

        def done() -> bool:
            if any(p.poll() is not None for p, _ in procs):
                return True
            words = {r.key for r in read_all(broker.bootstrap, "word-counts")}
            return len(read_all(broker.bootstrap, "greetings")) >= 2 and b"dog" in words

        wait_until(done, timeout=120, what="greetings and word counts")
        for proc, log in procs:
            assert proc.poll() is None, log.read_text()[-3000:]
        values = sorted(r.value for r in read_all(broker.bootstrap, "greetings"))
        assert values == [b"hello, ada!", b"hello, grace!"]
        words = {r.key for r in read_all(broker.bootstrap, "word-counts")}
        assert words == {b"the", b"cat", b"saw", b"dog"}
    finally:
        codes = [_stop(proc) for proc, _ in procs]
    assert codes == [0, 0], [log.read_text()[-2000:] for _, log in procs]


def _start(
    installed: Installed, broker: BrokerThread, target: str
) -> tuple[subprocess.Popen[bytes], Path]:
    name = target.split(":")[0].rsplit(".", 1)[-1]
    args = ["run", target, "--bootstrap-server", broker.bootstrap]
    args += ["--state-dir", str(installed.scratch / f"{name}-state")]
    log = installed.scratch / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(installed.venv / "bin" / "streamrt"), *args],
            cwd=installed.scratch,
            env=installed.env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return proc, log


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return -9
