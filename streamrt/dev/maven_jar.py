"""Building a small Maven project's jar once, and again only when a source is newer.

The Kafka Streams side of the differential tests (``tests/differential/runner``) and the
benchmarks' Kafka Streams peer (``bench/kafka-streams``) are such projects: nothing binary is
committed, ``mvn -q -B package`` writes the jar (and its dependencies) from Maven Central,
under the machine-wide Maven lock so that parallel test sessions build it once.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from streamrt.dev.maven_libs import maven_lock

__all__ = ("ensure_jar", "jar_is_stale")


def jar_is_stale(project: Path, jar: Path) -> bool:
    """True if ``jar`` is missing or older than the project's pom.xml or a Java source."""
    if not jar.exists():
        return True
    built = jar.stat().st_mtime
    sources = [project / "pom.xml", *project.rglob("src/**/*.java")]
    return any(p.stat().st_mtime > built for p in sources)


def ensure_jar(
    project: Path, jar: Path, what: str, error: type[Exception], timeout: float = 900.0
) -> Path:
    """``jar``, built by ``mvn package`` in ``project`` if stale; ``error`` (naming ``what``)
    when java/mvn are missing or the build fails (e.g. Maven Central unreachable)."""
    if not jar_is_stale(project, jar):
        return jar
    missing = [t for t in ("java", "mvn") if shutil.which(t) is None]
    if missing:
        raise error(f"building {what} needs {' and '.join(missing)}")
    with maven_lock():  # another test session may be building it right now
        if not jar_is_stale(project, jar):
            return jar
        done = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(project / "pom.xml"), "package"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    if done.returncode != 0 or not jar.exists():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        raise error(
            f"building {project} failed (mvn exit {done.returncode}; Maven Central "
            f"unreachable?):\n{tail}"
        )
    return jar
