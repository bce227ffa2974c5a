"""What the tests of whole snippets share: check one (indented) snippet and get its findings as
(code, row) or its codes, and find the row of a line in it."""

from __future__ import annotations

import textwrap

from accumlint import engine


def findings(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    result = engine.check_source(textwrap.dedent(source).lstrip(), path)
    assert result.error is None, result.error
    return sorted((f.code, f.location.row) for f in result.findings)


def codes(source: str, path: str = "t.py") -> list[str]:
    return [code for code, _ in findings(source, path)]


def row(source: str, text: str, last: bool = False) -> int:
    """The row of the first (or last) line holding `text`, counted as `findings` counts them."""
    rows = [i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if text in line]
    return rows[-1] if last else rows[0]
