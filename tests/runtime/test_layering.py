"""The runtime and state layers import neither the broker nor the REST layer, not even inside
a function (an AST scan, so lazy imports count too)."""

from __future__ import annotations

from pathlib import Path

import pytest

import streamrt
from tests.source_scan import imports

ROOT = Path(streamrt.__file__).parent
FORBIDDEN = {
    "runtime": ("streamrt.rest", "streamrt.broker"),
    "state": ("streamrt.rest", "streamrt.broker", "streamrt.runtime"),
}


def imported_modules(path: Path) -> set[str]:
    return {name for name, level in imports(path) if level == 0}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_does_not_import_upwards(package: str) -> None:
    bad = [
        f"{path.relative_to(ROOT.parent)} imports {module}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for module in imported_modules(path)
        if module.startswith(FORBIDDEN[package])
    ]
    assert not bad, "\n".join(bad)
