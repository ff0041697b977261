"""Word count, as an example: lines of text in ``text-input``, running counts per word to
``word-counts``. It ships in the package as ``streamrt.examples.wordcount``; this module
re-exports it, so ``streamrt run apps.wordcount:app`` from a checkout runs the same app.
"""

from __future__ import annotations

from streamrt.examples.wordcount import app

__all__ = ("app",)
