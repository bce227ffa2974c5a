"""One decoded source text and the mapping from CPython's node positions to it.

CPython's `ast` gives 1-based lines and UTF-8 *byte* columns; findings and edits need character
offsets into the decoded text. Every conversion lives here."""

from __future__ import annotations

import ast
import codecs
import functools
import io
import re
import tokenize
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Union

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class DecodeError(Exception):
    """The bytes cannot be decoded as Python source; the message names the cause."""


def decode(data: Union[str, bytes]) -> tuple[str, str]:
    """(text, encoding) by PEP 263: a BOM or an encoding cookie, else UTF-8. Newlines are kept
    as they are, so edits on the text can be encoded back byte for byte."""
    if isinstance(data, str):
        return data, "utf-8"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError) as exc:
        raise DecodeError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise DecodeError(f"'{exc.encoding}' codec can't decode byte at position {exc.start}") from None


def encode(text: str, encoding: str) -> bytes:
    # "utf-8-sig" writes the BOM back; every other codec writes what it decoded.
    return text.encode(encoding)


@dataclass
class SourceText:
    text: str
    _lines: list[str] = field(init=False, repr=False, default_factory=list)

    @functools.cached_property
    def _starts(self) -> list[int]:
        # Built on first use: most files of a whole repository never have a position asked for.
        starts = [0]
        starts.extend(m.end() for m in _LINE_BREAK.finditer(self.text))
        return starts

    @property
    def lines(self) -> list[str]:
        """The lines without their line breaks (a final empty line when the text ends with one)."""
        if not self._lines:
            self._lines = [self.line(n) for n in range(1, len(self._starts) + 1)]
        return self._lines

    def line(self, lineno: int) -> str:
        """Line `lineno` (1-based) without its line break."""
        if not 1 <= lineno <= len(self._starts):
            return ""
        start = self._starts[lineno - 1]
        end = self._starts[lineno] if lineno < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def line_start(self, lineno: int) -> int:
        return self._starts[min(max(lineno, 1), len(self._starts)) - 1]

    def line_end(self, lineno: int) -> int:
        """Offset of the end of line `lineno`, before its line break."""
        return self.line_start(lineno) + len(self.line(lineno))

    def after_line(self, lineno: int) -> int:
        """Offset of the start of the next line (or the end of the text)."""
        return self._starts[lineno] if lineno < len(self._starts) else len(self.text)

    def newline(self) -> str:
        match = _LINE_BREAK.search(self.text)
        return match.group() if match else "\n"

    def offset(self, lineno: int, byte_col: int) -> int:
        line = self.line(lineno)
        if line.isascii():
            return self.line_start(lineno) + byte_col
        return self.line_start(lineno) + len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        """Character offsets of a node's text (parentheses around an expression not included)."""
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based, columns in characters."""
        index = bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def indent_of(self, lineno: int) -> str:
        line = self.line(lineno)
        return line[: len(line) - len(line.lstrip(" \t"))]
