"""Syntax that a newer Python parses and the running one does not: a project written for 3.12
(PEP 695 `type X = ...` aliases and `def f[T](...)` / `class C[T]:` generics, PEP 701 f-strings
that reuse their quote inside a replacement field) checked by accumlint on 3.11. Read from the
line the parser stopped at, so a real syntax error is never taken for one."""

from __future__ import annotations

import ast
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
    if sys.version_info[:2] < (3, 12) and _quote_reused_in_fstring(line):
        return "3.12", "an f-string that reuses its quote inside a replacement field"
    return None


# An f-string's opening quote, then a replacement field holding that same quote, then `}`.
_FIELD_WITH_QUOTE = re.compile(r"""(?<![\w])[rRbB]?[fF][rR]?(['"])[^'"{}]*?\{([^{}]*\1[^{}]*)\}""")


def _quote_reused_in_fstring(line: str) -> bool:
    """`f"{d["key"]}"`: the field inside parses as an expression on its own (with its conversion
    or format spec taken off), so the line is valid 3.12, not a broken string."""
    for match in _FIELD_WITH_QUOTE.finditer(line):
        field = match.group(2).rstrip("= ")
        for candidate in (field, field.rsplit("!", 1)[0], field.rsplit(":", 1)[0]):
            try:
                ast.parse(candidate.strip(), mode="eval")
            except SyntaxError:
                continue
            return True
    return False
