"""Syntax that a newer Python parses and the running one does not: a project written for 3.12
(PEP 695 `type X = ...` aliases and `def f[T](...)` / `class C[T]:` generics) checked by
accumlint on 3.11. Read from the line the parser stopped at, so a real syntax error is never
taken for one."""

from __future__ import annotations

import re
import sys
from typing import Optional

# (first version that parses it, what it is, the line's shape)
_FEATURES = (
    ((3, 12), "a `type` alias statement", re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*(\[[^\]]*\])?\s*=")),
    ((3, 12), "a generic function", re.compile(r"^\s*(async\s+)?def\s+[A-Za-z_]\w*\s*\[")),
    ((3, 12), "a generic class", re.compile(r"^\s*class\s+[A-Za-z_]\w*\s*\[")),
)


def running_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def newer_syntax(text: str, lineno: Optional[int]) -> Optional[tuple[str, str]]:
    """(the version that parses it, what it is) when the line a SyntaxError names is syntax of a
    newer Python than this one; else None."""
    if lineno is None:
        return None
    lines = text.splitlines()
    if not 1 <= lineno <= len(lines):
        return None
    line = lines[lineno - 1]
    for version, what, shape in _FEATURES:
        if sys.version_info[:2] < version and shape.match(line):
            return f"{version[0]}.{version[1]}", what
    return None
