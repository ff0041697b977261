"""Print the bench venv's requirements: streamrt's dependencies and the ``bench`` extra, less
streamrt's own confluent-kafka pin.

Why: Quix Streams 3.28.1 (the ``bench`` extra) needs confluent-kafka < 2.13 while streamrt pins
2.16.1 (its default data path). The bench venv only runs Quix Streams and imports streamrt's
pure-Python workload helpers, so Quix Streams' confluent-kafka is the one it gets; streamrt
itself goes in with ``pip install --no-deps -e .`` (Makefile, ``bench-venv``).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def requirements(pyproject: Path = PYPROJECT) -> list[str]:
    """The core dependencies and the ``bench`` extra, without confluent-kafka's core pin."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    core = [r for r in project["dependencies"] if not re.match(r"confluent-kafka\b", r)]
    return core + list(project["optional-dependencies"]["bench"])


if __name__ == "__main__":
    sys.stdout.write("".join(f"{r}\n" for r in requirements()))
