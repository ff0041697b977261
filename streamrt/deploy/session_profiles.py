"""The session-profile fold, under its old name: it lives in
:mod:`streamrt.examples.session_profiles` now, beside the sessions app that ships in the
package. Kept so benchmarks and scripts that import it from here keep working."""

from streamrt.examples.session_profiles import (
    PROFILE_PADDING,
    RECENT_PAGES,
    add_click,
    new_profile,
)

__all__ = ("PROFILE_PADDING", "RECENT_PAGES", "add_click", "new_profile")
