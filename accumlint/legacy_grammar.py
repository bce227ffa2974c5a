"""Code written for Python 3.5 and 3.6, where `async` and `await` were still names
(`Process(target=f, async=True)`): CPython's parser takes it when asked for that grammar."""

from __future__ import annotations

import ast
from typing import Union

LEGACY_GRAMMAR = (3, 6)


def parse_python(source: Union[str, bytes], filename: str) -> ast.Module:
    """The module as today's grammar reads it, or else as Python 3.6's did; the first error if
    neither does."""
    try:
        return ast.parse(source, filename)
    except SyntaxError as error:
        try:
            return ast.parse(source, filename, feature_version=LEGACY_GRAMMAR)
        except SyntaxError:
            raise error from None


def compiles(source: str, filename: str) -> bool:
    """Byte-compiles, or parses under the grammar it was written for (a fix must keep a 3.6-era
    file as valid as it was)."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
        return True
    except SyntaxError:
        try:
            ast.parse(source, filename, feature_version=LEGACY_GRAMMAR)
            return True
        except SyntaxError:
            return False
