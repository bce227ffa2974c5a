"""What the tests of whole snippets share: check one source and get its findings (all of them,
or one rule's), check one (indented) snippet and get its findings as (code, row) or its codes,
and find the row of a line in it."""

from __future__ import annotations

import textwrap
from collections.abc import Collection
from typing import Optional, Union

from accumlint import engine
from accumlint.model import Finding


def findings_of(
    source: Union[str, bytes],
    code: Optional[str] = None,
    path: str = "t.py",
    dedent: bool = False,
    select: Optional[Collection[str]] = None,
) -> list[Finding]:
    """Check `source` (dedented first with `dedent`) as the file `path`, with only the rules of
    `select` when given; the check must not fail. The findings, only those of `code` when given."""
    if dedent:
        assert isinstance(source, str)
        source = textwrap.dedent(source)
    result = engine.check_source(source, path) if select is None else engine.check_source(source, path, select=select)
    assert result.error is None, result.error
    return [f for f in result.findings if code is None or f.code == code]


def findings(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return sorted((f.code, f.location.row) for f in findings_of(textwrap.dedent(source).lstrip(), path=path))


def codes(source: str, path: str = "t.py") -> list[str]:
    return [code for code, _ in findings(source, path)]


def row(source: str, text: str, last: bool = False) -> int:
    """The row of the first (or last) line holding `text`, counted as `findings` counts them."""
    rows = [i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if text in line]
    return rows[-1] if last else rows[0]
