"""Spark's own Kafka source (``spark-sql-kafka-0-10``) from Maven Central, next to ``streamrt``.

The pyspark wheel ships no Kafka connector, so ``maven/spark-kafka-pom.xml`` resolves its four
jars (the connector, its token provider, ``kafka-clients`` and ``commons-pool2``; Hadoop and
Scala come with pyspark) once into ``~/.cache/streamrt/spark-sql-kafka-<version>/jars``, and
:func:`connector_conf` gives the ``spark.jars`` a session needs *before* its JVM starts.

The connector's version should equal pyspark's. Maven Central has no 4.3.0 build of the
connector (the newest is 4.2.0, checked 2026-11): when pyspark's own version is missing, the
newest published 4.x in :data:`FALLBACK_VERSIONS` is used and :func:`connector_version` says
so. Spark keeps the DataSource V2 interfaces the connector uses stable within 4.x; the
comparison test (``tests/spark/test_native_kafka.py``) is what shows it works.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

from streamrt.dev.maven_libs import maven_lock

__all__ = (
    "FALLBACK_VERSIONS",
    "ConnectorUnavailable",
    "connector_conf",
    "connector_jars",
    "connector_version",
)

FALLBACK_VERSIONS = ("4.2.0",)
_POM = Path(__file__).resolve().parent / "maven" / "spark-kafka-pom.xml"  # package data
_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)
_COMPLETE = ".complete"


class ConnectorUnavailable(RuntimeError):
    """No java/mvn, Maven Central unreachable, or no usable connector version."""


def _cache_root() -> Path:
    if os.environ.get("STREAMRT_CACHE_DIR"):
        return Path(os.environ["STREAMRT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "streamrt"


def _jars_dir(version: str) -> Path:
    return _cache_root() / f"spark-sql-kafka-{version}" / "jars"


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _resolve(version: str, timeout: float) -> Path | str:
    """The jars directory, or Maven's complaint (a missing version is remembered for a day,
    so every session does not ask Central again)."""
    target = _jars_dir(version)
    if (target / _COMPLETE).exists():
        return target
    missing = target.parent / ".missing"
    if missing.exists() and time.time() - missing.stat().st_mtime < 86_400:
        return missing.read_text().strip()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _COMPLETE).exists():
            return target
        scratch = target.parent / f"jars.partial-{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        command = ["mvn", "-q", "-B", "-f", str(_POM), f"{_PLUGIN}:copy-dependencies"]
        command += ["-DincludeScope=runtime", f"-Dspark.version={version}"]
        command += [f"-DincludeArtifactIds={','.join(_ARTIFACTS)}", f"-DoutputDirectory={scratch}"]
        try:
            with maven_lock():
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=timeout, check=False
                )
        except subprocess.TimeoutExpired:
            shutil.rmtree(scratch, ignore_errors=True)
            return f"Maven did not finish within {timeout:g} s"
        jars = sorted(p.name for p in scratch.glob("*.jar")) if scratch.exists() else []
        if done.returncode != 0 or not any(j.startswith("spark-sql-kafka") for j in jars):
            shutil.rmtree(scratch, ignore_errors=True)
            lines = (done.stdout + done.stderr).strip().splitlines()
            errors = [line for line in lines if "ERROR" in line][:1] or lines[-1:]
            complaint = f"mvn exit {done.returncode}: {' '.join(errors)[:300]}"
            if "Could not find artifact" in complaint:
                missing.write_text(complaint + "\n")
            return complaint
        (scratch / _COMPLETE).write_text("\n".join(jars) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        scratch.rename(target)
    return target


def connector_jars(timeout: float = 600.0) -> tuple[str, list[Path]]:
    """(connector version, its jars), downloading once; :class:`ConnectorUnavailable` if not."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        raise ConnectorUnavailable(f"spark-sql-kafka-0-10 needs {' and '.join(missing)} on PATH")
    wanted = _pyspark_version()
    complaints = []
    for version in dict.fromkeys((wanted, *FALLBACK_VERSIONS)):
        found = _resolve(version, timeout)
        if isinstance(found, Path):
            return version, sorted(found.glob("*.jar"))
        complaints.append(f"{version}: {found}")
    raise ConnectorUnavailable(
        "could not get org.apache.spark:spark-sql-kafka-0-10_2.13 from Maven Central "
        f"(unreachable, interrupted or version missing): {'; '.join(complaints)}"
    )


def connector_version() -> str:
    """What :func:`connector_jars` resolves, e.g. ``4.2.0 (pyspark 4.3.0: not on Central)``."""
    version, _jars = connector_jars()
    wanted = _pyspark_version()
    return version if version == wanted else f"{version} (pyspark {wanted}: not on Central)"


def connector_conf(timeout: float = 600.0) -> dict[str, str]:
    """Spark confs that enable ``format("kafka")``; pass them to ``get_session(conf=...)``."""
    _version, jars = connector_jars(timeout)
    return {"spark.jars": ",".join(str(p) for p in jars)}
