"""Apicurio Registry 3.x from Maven Central: a real registry speaking Confluent's REST API.

Apicurio publishes its Quarkus build as ``io.apicurio:apicurio-registry-app:<v>:tar.gz:all``
(a runnable ``-runner.jar`` and its ``lib/``). ``mvn dependency:get`` cannot fetch it: the
parent POM ``io.apicurio:apicurio-registry:3.0.9`` is not on Central, so Maven cannot read the
artifact's descriptor. The tarball is downloaded from Central's URL instead, checked against
Central's ``.sha1`` and unpacked once into ``~/.cache/streamrt``. 3.0.9 is the newest release
that runs on Java 17 (3.3.x is built for Java 21). Storage is H2 in a file of the work
directory, so a restarted registry keeps its schemas and ids.
Its Confluent-compatible API is at ``<base>/apis/ccompat/v7``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import httpx

from streamrt.dev.apache_kafka import die_with_parent, free_ports
from streamrt.dev.maven_libs import cache_root, fill_once

__all__ = ("APICURIO_VERSION", "ApicurioRegistry", "RegistryUnavailable", "ensure_apicurio")

logger = logging.getLogger(__name__)

APICURIO_VERSION = "3.0.9"
_CENTRAL = "https://repo.maven.apache.org/maven2/io/apicurio/apicurio-registry-app"


class RegistryUnavailable(RuntimeError):
    """The registry cannot be had here: no java, Maven Central unreachable, or it did not start."""


def _download(url: str, target: Path, timeout: float) -> None:
    with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response:
        response.raise_for_status()
        with open(target, "wb") as out:
            for chunk in response.iter_bytes(1 << 20):
                out.write(chunk)


def ensure_apicurio(version: str = APICURIO_VERSION, *, timeout: float = 600.0) -> Path:
    """The unpacked distribution's directory (holding the runner jar), fetched once."""
    name = f"apicurio-registry-app-{version}-all.tar.gz"

    def fill(scratch: Path) -> str:
        scratch.mkdir()
        archive = scratch / name
        logger.info("downloading Apicurio Registry %s from Maven Central (once)", version)
        try:
            _download(f"{_CENTRAL}/{version}/{name}", archive, timeout)
            expected = httpx.get(f"{_CENTRAL}/{version}/{name}.sha1", timeout=30).text.split()[0]
        except httpx.HTTPError as exc:
            raise RegistryUnavailable(f"cannot download {name} from Maven Central: {exc}") from exc
        actual = hashlib.sha1(archive.read_bytes(), usedforsecurity=False).hexdigest()
        if actual != expected:
            raise RegistryUnavailable(f"{name}: sha1 {actual} != Maven Central's {expected}")
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        archive.unlink()
        return version + "\n"

    home = cache_root() / f"apicurio-registry-{version}"
    return fill_once(home, fill, lock_name=".apicurio.lock")


class ApicurioRegistry:
    """One Apicurio Registry JVM on 127.0.0.1 (H2 storage in ``work_dir``), started and stopped."""

    def __init__(self, work_dir: Path, *, port: int | None = None, heap: str = "384m") -> None:
        self.work_dir = work_dir
        self.port = port or free_ports(1)[0]
        self.heap = heap
        self.version = APICURIO_VERSION
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """What ``schema.registry.url`` should say (Confluent's API)."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    @property
    def log_file(self) -> Path:
        return self.work_dir / "registry.log"

    def start(self, timeout: float = 180.0, *, compatibility: str = "BACKWARD") -> ApicurioRegistry:
        """Start the JVM, wait for the API, set the global compatibility (Confluent's default)."""
        if shutil.which("java") is None:
            raise RegistryUnavailable("Apicurio Registry needs java (17+) on PATH")
        home = ensure_apicurio(self.version)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        command = [
            "java",
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.http.host=127.0.0.1",
            # H2 in a file under work_dir: schemas (and their ids) survive a restart
            f"-Dapicurio.datasource.url=jdbc:h2:file:{self.work_dir.resolve() / 'registry-db'}",
            "-jar",
            str(home / f"apicurio-registry-app-{self.version}-runner.jar"),
        ]
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                command,
                cwd=self.work_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
        self._wait_ready(timeout)
        httpx.put(f"{self.url}/config", json={"compatibility": compatibility}, timeout=10)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise RegistryUnavailable(f"Apicurio Registry exited:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/subjects", timeout=2).status_code == 200:
                    return
            time.sleep(0.5)
        self.stop()
        raise RegistryUnavailable(f"Apicurio Registry not ready in {timeout:.0f} s")

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def requests_served(self) -> int:
        """HTTP requests the registry answered so far (its access log): the cache's witness."""
        with contextlib.suppress(OSError):
            return self.log_file.read_text(errors="replace").count("apicurio-registry.access")
        return 0

    def stop(self, timeout: float = 20.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
