"""Imports a module's source names, for the layering and purity tests.

CPython 3.11 can raise ``SystemError: AST constructor recursion depth mismatch`` from
``ast.parse`` in a long test process (gh-106905: the C recursion counter drifts after deep
recursion elsewhere); the same parse in a fresh interpreter is unaffected, so that is the
fallback.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

_SCAN = """
import ast, json, sys
out = []
for node in ast.walk(ast.parse(open(sys.argv[1]).read(), sys.argv[1])):
    if isinstance(node, ast.Import):
        out += [(a.name, 0) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
        out.append((node.module, node.level))
print(json.dumps(out))
"""


def imports(path: Path) -> list[tuple[str, int]]:
    """Every ``import x`` (level 0) and ``from x import ...`` (with its level) in ``path``."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except SystemError:  # gh-106905
        done = subprocess.run(
            [sys.executable, "-c", _SCAN, str(path)], capture_output=True, text=True, check=True
        )
        return [(name, level) for name, level in json.loads(done.stdout)]
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, node.level))
    return out
