"""The package's import contracts (``[tool.importlinter]`` in pyproject.toml) hold.

One test per contract, so a failure names the rule that broke: the layers (spark/demo above
deploy/REST above the runtime above state/broker/admin above the wire), the runtime never
importing the broker, REST, Spark or the deploy tooling, and no import cycle between the
subpackages (two levels deep), the runtime's own layers (instance, engine | dsl, processors,
graph, base), the engine's rooms (their layers, no cycle, only ``clients`` importing a Kafka
client library). ``lint-imports`` runs as a subprocess on this checkout's sources. The size rules
of issue 25 are held here too: no module over 500 lines, no function over 60; and issue 37's one
TopicPartition type inside the runtime.
"""

from __future__ import annotations

import ast
import json
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
    assert {
        "layers",
        "runtime-alone",
        "acyclic",
        "runtime-layers",
        "engine-rooms",
        "engine-acyclic",
        "engine-clients",
    } <= set(CONTRACTS)


MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def _package_sources() -> list[Path]:
    return sorted((ROOT / "streamrt").rglob("*.py"))


def test_no_module_is_a_big_room() -> None:
    """Small modules with one job: none of the package's modules is over 500 lines."""
    big = {
        str(p.relative_to(ROOT)): n
        for p in _package_sources()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not big, f"modules over {MAX_MODULE_LINES} lines: {big}"


# Run in a fresh interpreter: CPython 3.11's AST constructor keeps its recursion depth per
# interpreter, so ``ast.parse`` beside another thread's compile (a test's leftover thread
# importing a module) can fail with "SystemError: AST constructor recursion depth mismatch"
# (python/cpython#106905), as it did once in an xdist worker.
_LONG_FUNCTIONS = """
import ast, json, sys
from pathlib import Path
root, limit = Path(sys.argv[1]), int(sys.argv[2])
long = {}
for path in sorted((root / "streamrt").rglob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > limit:
                long[f"{path.relative_to(root)}:{node.lineno} {node.name}"] = lines
print(json.dumps(long))
"""


def test_no_function_is_over_sixty_lines() -> None:
    """ruff holds complexity and statement counts; this holds the length a reader sees."""
    result = subprocess.run(
        [sys.executable, "-c", _LONG_FUNCTIONS, str(ROOT), str(MAX_FUNCTION_LINES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    long = json.loads(result.stdout)
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


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


# Where a topic-partition type may be defined: the one type, and the packages outside the
# runtime that keep their own (the broker's wire-side aliases; Spark's, with Kafka's spelling).
_ONE_TOPIC_PARTITION = "streamrt/topic_partition.py"
_OWN_TOPIC_PARTITION = ("streamrt/broker/", "streamrt/spark/")


def _defines_topic_partition(tree: ast.AST) -> bool:
    """A class or a module-level name ``TopicPartition`` bound to anything but an import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "TopicPartition":
            return True
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "TopicPartition" for t in targets):
            return True
    return False


def test_one_topic_partition_type_inside_the_runtime() -> None:
    """The runtime, its state stores and its group member key partitions by
    ``streamrt.topic_partition.TopicPartition``; none defines another (a class or an alias)."""
    others = [
        rel
        for p in _package_sources()
        if (rel := str(p.relative_to(ROOT))) != _ONE_TOPIC_PARTITION
        and not rel.startswith(_OWN_TOPIC_PARTITION)
        and _defines_topic_partition(ast.parse(p.read_text()))
    ]
    assert not others, f"modules with their own TopicPartition: {others}"
