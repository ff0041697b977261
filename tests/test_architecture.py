"""The package's import contracts (``[tool.importlinter]`` in pyproject.toml) hold.

One test per contract, so a failure names the rule that broke: the layers (spark/demo above
deploy/REST above the runtime above state/broker/admin above the wire), the runtime never
importing the broker, REST, Spark or the deploy tooling, and no import cycle between the
top-level subpackages. ``lint-imports`` runs as a subprocess on this checkout's sources.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = [
    c["id"]
    for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
]


def _lint_imports() -> str:
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("lint-imports is missing: install the test extra (pip install -e '.[test]')")
    return found


def test_every_contract_has_an_id() -> None:
    assert {"layers", "runtime-alone", "acyclic"} <= set(CONTRACTS)


@pytest.mark.parametrize("contract", CONTRACTS)
def test_import_contract_is_kept(contract: str) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [_lint_imports(), "--no-cache", "--no-logo", "--contract", contract],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"import contract {contract!r} is broken:\n{result.stdout}{result.stderr}"
    )
