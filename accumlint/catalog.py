"""The rule catalog pages (rules/ACCnnn.md), from an installed wheel or a source checkout.

A wheel carries the repository's rules/ folder as accumlint/rule_pages/
(see pyproject.toml); in a source checkout (or an editable install, whose finder does not map
that folder) the pages are read from rules/ beside the package.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Optional

PAGES_PACKAGE = "accumlint"
PAGES_DIR = "rule_pages"  # rules/ has no __init__.py: read it as data inside the package, which
# also works from a zipped wheel, where namespace packages cannot be imported
SOURCE_DIR = Path(__file__).resolve().parent.parent / "rules"


def page(code: str) -> Optional[str]:
    """The page's Markdown text, or None when this installation has no page for `code`."""
    name = f"{code.upper()}.md"
    try:
        resource = resources.files(PAGES_PACKAGE) / PAGES_DIR / name
        if resource.is_file():
            return resource.read_text(encoding="utf-8")
    except (ModuleNotFoundError, OSError):
        pass
    path = SOURCE_DIR / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
