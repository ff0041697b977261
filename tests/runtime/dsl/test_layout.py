"""The DSL's three packages keep their layers (issue 25): ``dsl`` (the API) above
``processors`` (the operators) above ``graph`` (what the DSL builds) above the shared base
modules, and none of them reaches up into the engine or the instance. An AST scan, so
imports inside functions count too."""

from __future__ import annotations

from pathlib import Path

import pytest

import streamrt
from tests.source_scan import imports

RUNTIME = Path(streamrt.__file__).parent / "runtime"
UP = ("streamrt.runtime.dsl",)
ENGINE_AND_INSTANCE = tuple(
    f"streamrt.runtime.{m}"
    for m in [
        "app",
        "assignor",
        "changelog_ends",
        "client_settings",
        "collector",
        "commit",
        "eos",
        "handoff",
        "internal_topics",
        "kafka_adapter",
        "metadata",
        "placement",
        "process_child",
        "process_thread",
        "purge",
        "queries",
        "restore",
        "source_topics",
        "standby",
        "store_reads",
        "task",
        "thread",
        "engine",
        "instance",
    ]
)
FORBIDDEN = {
    "graph": ("streamrt.runtime.processors", *UP, *ENGINE_AND_INSTANCE),
    "processors": (*UP, *ENGINE_AND_INSTANCE),
    "dsl": ENGINE_AND_INSTANCE,
}


def _imported(path: Path) -> set[str]:
    return {name for name, level in imports(path) if level == 0}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_below_it(package: str) -> None:
    bad = [
        f"{path.relative_to(RUNTIME)} imports {module}"
        for path in sorted((RUNTIME / package).glob("*.py"))
        for module in _imported(path)
        if any(module == f or module.startswith(f + ".") for f in FORBIDDEN[package])
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "module",
    ["processor", "windows", "stores", "window_stores", "timestamps", "exception_handlers"],
)
def test_shared_base_modules_import_none_of_the_dsl_packages(module: str) -> None:
    """The shared base (the Processor API, windows, typed stores, ...) sits below ``graph``."""
    above = ("streamrt.runtime.graph", "streamrt.runtime.processors", *UP)
    found = _imported(RUNTIME / f"{module}.py")
    assert not [m for m in found if any(m == a or m.startswith(a + ".") for a in above)]


def test_no_flat_dsl_module_is_left_behind() -> None:
    """The modules moved into the packages are gone from ``runtime/`` (no shims)."""
    moved = [
        "builder",
        "tables",
        "joins",
        "fk_join",
        "windowed",
        "global_table",
        "operators",
        "suppress",
    ]
    moved += ["window_aggregate", "topology", "copartition"]
    assert not [m for m in moved if (RUNTIME / f"{m}.py").exists()]
    assert not (RUNTIME / "dsl.py").exists()
