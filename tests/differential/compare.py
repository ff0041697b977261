"""Record-by-record comparison of Kafka Streams' output with streamrt's, readably."""

from __future__ import annotations

import itertools

from tests.differential.streamrt_side import Event


def first_difference(expected: list[Event], actual: list[Event]) -> str | None:
    """One line naming the first record that differs, or None when the outputs are the same."""
    for i, (want, got) in enumerate(itertools.zip_longest(expected, actual)):
        if want is None:
            return f"record {i}: streamrt has an extra {got.describe()}"
        if got is None:
            return f"record {i}: streamrt lacks {want.describe()}"
        if not want.same(got):
            return f"record {i}: Kafka Streams {want.describe()} | streamrt {got.describe()}"
    return None


def listing(expected: list[Event], actual: list[Event], limit: int = 40) -> str:
    """Both outputs side by side (the first ``limit`` records), a ``!`` where they differ."""
    rows = []
    for i, (want, got) in enumerate(itertools.zip_longest(expected, actual)):
        if i == limit:
            rows.append("  ...")
            break
        mark = " " if want is not None and got is not None and want.same(got) else "!"
        left = want.describe() if want is not None else "-"
        right = got.describe() if got is not None else "-"
        rows.append(f"{mark} {i:3d} kafka: {left}\n        streamrt: {right}")
    return "\n".join(rows) or "  (no output on either side)"
