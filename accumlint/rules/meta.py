"""What every rule module declares about itself, besides its `check` function."""

from __future__ import annotations

from typing import Literal, Optional

# "safe", "unsafe", "sometimes" (safe or unsafe depending on what the code shows), or None
# (report only).
FixSafety = Optional[Literal["safe", "unsafe", "sometimes"]]
