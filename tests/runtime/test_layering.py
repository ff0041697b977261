"""The runtime and state layers import neither the broker nor the REST layer, not even inside
a function (an AST scan, so lazy imports count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import streamrt

ROOT = Path(streamrt.__file__).parent
FORBIDDEN = {
    "runtime": ("streamrt.rest", "streamrt.broker"),
    "state": ("streamrt.rest", "streamrt.broker", "streamrt.runtime"),
}


def imported_modules(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_does_not_import_upwards(package: str) -> None:
    bad = [
        f"{path.relative_to(ROOT.parent)} imports {module}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for module in imported_modules(path)
        if module.startswith(FORBIDDEN[package])
    ]
    assert not bad, "\n".join(bad)
