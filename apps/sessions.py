"""The sessions app of ``streamrt demo``, as an example: it ships in the package as
``streamrt.examples.sessions`` (so an installed streamrt runs it), and this module re-exports
it, so ``streamrt run apps.sessions:app`` from a checkout runs the same app.
"""

from __future__ import annotations

from streamrt.examples.sessions import PROFILE_PADDING, RECENT_PAGES, add_click, app, new_profile

__all__ = ("PROFILE_PADDING", "RECENT_PAGES", "add_click", "app", "new_profile")
