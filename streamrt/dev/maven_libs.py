"""Apache Kafka's jars from Maven Central, resolved once into a cache outside the repository.

There is no Kafka tarball on Maven Central, so ``maven/apache-kafka-pom.xml`` (beside it, package
data) names the broker and Maven's dependency plugin copies its runtime classpath to
``~/.cache/streamrt/apache-kafka-<v>/libs``. :mod:`streamrt.dev.apache_kafka` runs it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = (
    "KAFKA_VERSION",
    "KafkaUnavailable",
    "MavenFailed",
    "cache_root",
    "copy_dependencies",
    "ensure_libs",
    "fill_once",
    "libs_dir",
    "maven_lock",
)

logger = logging.getLogger(__name__)

# Keep in sync with maven/apache-kafka-pom.xml (passed to Maven as -Dkafka.version too).
KAFKA_VERSION = "4.3.1"
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
# in the package (package data): `streamrt dev kafka` works from an installed streamrt
_POM = Path(__file__).resolve().parent / "maven" / "apache-kafka-pom.xml"
_COMPLETE = ".complete"


class KafkaUnavailable(RuntimeError):
    """Apache Kafka cannot be assembled here: no java/mvn, or Maven Central unreachable."""


def cache_root() -> Path:
    """``$STREAMRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/streamrt``, else ``~/.cache/streamrt``."""
    if os.environ.get("STREAMRT_CACHE_DIR"):
        return Path(os.environ["STREAMRT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "streamrt"


@contextmanager
def maven_lock() -> Iterator[None]:
    """Hold the machine-wide Maven lock: one ``mvn`` at a time from streamrt.

    Maven 3.8's local repository (``~/.m2``) is not safe for two builds downloading into it at
    once, and two processes building the same project would share its ``target/``. Test
    sessions run side by side (pytest-xdist workers), so every place that runs ``mvn``
    (Apache Kafka's jars, Spark's connector, the Kafka Streams runner and peer) takes this lock.
    """
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "maven.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"apache-kafka-{version}" / "libs"


def fill_once(target: Path, fill: Callable[[Path], str], lock_name: str = ".lock") -> Path:
    """``target``, filled once: ``fill(scratch)`` writes a scratch directory that becomes
    ``target`` only when it returns (its text goes in the completion marker), so an interrupted
    fill is never mistaken for a complete one; a lock file beside ``target`` serialises two
    processes (e.g. two test sessions) asking at once. A failing fill leaves nothing behind."""
    if (target / _COMPLETE).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / lock_name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _COMPLETE).exists():
            return target
        scratch = target.parent / f"{target.name}.partial-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            marker = fill(scratch)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        (scratch / _COMPLETE).write_text(marker)
        shutil.rmtree(target, ignore_errors=True)
        scratch.rename(target)
    return target


class MavenFailed(RuntimeError):
    """``mvn`` failed or timed out; ``output`` holds its lines (``None``: it timed out)."""

    def __init__(self, message: str, output: list[str] | None) -> None:
        super().__init__(message)
        self.output = output


def copy_dependencies(
    pom: Path, scratch: Path, args: Sequence[str], wanted_prefix: str, timeout: float
) -> list[str]:
    """The runtime classpath of ``pom`` copied into ``scratch`` by Maven's dependency plugin,
    under :func:`maven_lock`: the jar names, or :class:`MavenFailed` if Maven fails, times out
    or copies no jar named ``wanted_prefix…``."""
    command = ["mvn", "-q", "-B", "-f", str(pom), f"{_DEPENDENCY_PLUGIN}:copy-dependencies"]
    command += ["-DincludeScope=runtime", f"-DoutputDirectory={scratch}", *args]
    try:
        with maven_lock():
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, check=False
            )
    except subprocess.TimeoutExpired as exc:
        raise MavenFailed(f"Maven did not finish within {timeout:g} s", None) from exc
    jars = sorted(p.name for p in scratch.glob("*.jar")) if scratch.exists() else []
    if done.returncode != 0 or not any(j.startswith(wanted_prefix) for j in jars):
        output = (done.stdout + done.stderr).strip().splitlines()
        raise MavenFailed(f"mvn exit {done.returncode}", output)
    return jars


def ensure_libs(
    version: str = KAFKA_VERSION,
    *,
    timeout: float = 900.0,
    maven_args: Sequence[str] = (),
    say: Callable[[str], None] = lambda s: logger.info(s),
) -> Path:
    """The broker's jars, downloaded once with Maven; :class:`KafkaUnavailable` if impossible."""
    target = libs_dir(version)
    if (target / _COMPLETE).exists():
        return target
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        raise KafkaUnavailable(
            f"Apache Kafka {version} needs {' and '.join(missing)} on PATH (Java 17+, Maven 3)"
        )
    if not _POM.exists():
        raise KafkaUnavailable(f"{_POM} is missing (a broken streamrt install?)")

    def fill(scratch: Path) -> str:
        say(f"assembling Apache Kafka {version} from Maven Central into {target} (once)")
        args = [f"-Dkafka.version={version}", *maven_args]
        try:
            return "\n".join(copy_dependencies(_POM, scratch, args, "kafka_2.13-", timeout)) + "\n"
        except MavenFailed as exc:
            if exc.output is None:
                raise KafkaUnavailable(
                    f"Apache Kafka {version}: {exc} (Maven Central slow or unreachable); "
                    "nothing was cached"
                ) from exc
            raise KafkaUnavailable(
                f"could not assemble Apache Kafka {version} from Maven Central "
                f"({exc}; unreachable, interrupted or version missing):\n"
                + "\n".join(exc.output[-12:])
            ) from exc

    return fill_once(target, fill)
