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

import shutil
import time
from pathlib import Path

from streamrt.dev.maven_libs import MavenFailed, cache_root, copy_dependencies, fill_once

__all__ = (
    "FALLBACK_VERSIONS",
    "ConnectorUnavailable",
    "connector_conf",
    "connector_jars",
    "connector_version",
)

FALLBACK_VERSIONS = ("4.2.0",)
_POM = Path(__file__).resolve().parent / "maven" / "spark-kafka-pom.xml"  # package data
_ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)
_COMPLETE = ".complete"


class ConnectorUnavailable(RuntimeError):
    """No java/mvn, Maven Central unreachable, or no usable connector version."""


def _jars_dir(version: str) -> Path:
    return cache_root() / f"spark-sql-kafka-{version}" / "jars"


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _resolve(version: str, timeout: float) -> Path | str:
    """The jars directory, or Maven's complaint (a missing version is remembered for a day,
    so every session does not ask Central again)."""
    target = _jars_dir(version)
    missing = target.parent / ".missing"
    fresh = missing.exists() and time.time() - missing.stat().st_mtime < 86_400
    if fresh and not (target / _COMPLETE).exists():
        return missing.read_text().strip()

    def fill(scratch: Path) -> str:
        args = [f"-Dspark.version={version}", f"-DincludeArtifactIds={','.join(_ARTIFACTS)}"]
        return "\n".join(copy_dependencies(_POM, scratch, args, "spark-sql-kafka", timeout)) + "\n"

    try:
        return fill_once(target, fill)
    except MavenFailed as exc:
        if exc.output is None:
            return str(exc)
        errors = [line for line in exc.output if "ERROR" in line][:1] or exc.output[-1:]
        complaint = f"{exc}: {' '.join(errors)[:300]}"
        if "Could not find artifact" in complaint:
            missing.write_text(complaint + "\n")
        return complaint


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
