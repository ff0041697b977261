"""The fixed scenarios (``scenarios/**/*.json``, one a file, named by the file) and the list of
scenarios that differ from Kafka Streams today (``known_differences.toml``)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCENARIO_DIR = HERE / "scenarios"
KNOWN_FILE = HERE / "known_differences.toml"


def scenario_files() -> list[Path]:
    return sorted(SCENARIO_DIR.rglob("*.json"))


def load(path: Path) -> dict[str, Any]:
    """A scenario; its ``name`` is the file name without ``.json``."""
    scenario: dict[str, Any] = json.loads(path.read_text())
    scenario["name"] = path.stem
    return scenario


def known_differences() -> dict[str, str]:
    """Scenario name -> the one-line reason it differs today."""
    with KNOWN_FILE.open("rb") as f:
        table: dict[str, str] = tomllib.load(f)["scenarios"]
    return table


def dump(scenario: dict[str, Any]) -> str:
    """A scenario file's text: one topology node and one input step a line."""

    def block(items: list[Any]) -> list[str]:
        return [
            f"  {json.dumps(item)}" + ("," if i < len(items) - 1 else "")
            for i, item in enumerate(items)
        ]

    lines = ["{", f' "description": {json.dumps(scenario.get("description", ""))},']
    lines += [' "topology": [', *block(scenario["topology"]), " ],"]
    lines += [' "steps": [', *block(scenario["steps"]), " ]", "}"]
    return "\n".join(lines) + "\n"


def save(scenario: dict[str, Any], directory: Path) -> Path:
    """Write ``scenario`` as ``<directory>/<name>.json`` (a shrunk property counterexample)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{scenario['name']}.json"
    path.write_text(dump(scenario))
    return path
