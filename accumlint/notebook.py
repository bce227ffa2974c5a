"""Jupyter notebooks: check each code cell, fix cells in place, leave every other byte alone.

Findings carry their cell as data (`Finding.cell`, numbered from 1 counting every cell, markdown
included, as a reader counts them); their rows and columns are relative to the cell. Reporters
that must point into the `.ipynb` file itself (GitHub annotations, SARIF) map a cell position to
the JSON text with `NotebookIndex`.
"""

from __future__ import annotations

import ast
import json
import re
import secrets
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable, Collection, Iterator, Optional

from accumlint.model import FileError, FileResult, Finding, Location


def _engine() -> ModuleType:
    # Imported on first use, like everywhere else: the analysis is not needed for a cache hit.
    from accumlint import engine

    return engine


class NotebookError(Exception):
    """The file is not a notebook we can read; the message is one line."""


# --- A JSON reader that remembers where each cell's "source" value lies in the text. ---

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
# The standard library's JSON string scanner (typeshed does not declare it).
_scanstring: Callable[[str, int, bool], tuple[str, int]] = getattr(json.decoder, "scanstring")
JSONPath = tuple[Any, ...]


@dataclass
class _Span:
    start: int
    end: int


class _Reader:
    """Recursive descent over JSON text; records spans of `cells[i].source` values."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.source_spans: dict[int, _Span] = {}

    def parse(self) -> Any:
        value, end = self._value(self._skip(0), ())
        if self._skip(end) != len(self.text):
            raise NotebookError("invalid JSON: extra data after the notebook")
        return value

    def _skip(self, pos: int) -> int:
        return _WS.match(self.text, pos).end()  # type: ignore[union-attr]

    def _fail(self, pos: int, what: str) -> NotebookError:
        line = self.text.count("\n", 0, pos) + 1
        return NotebookError(f"invalid JSON at line {line}: {what}")

    def _value(self, pos: int, path: JSONPath) -> tuple[Any, int]:
        if pos >= len(self.text):
            raise self._fail(pos, "unexpected end of file")
        char = self.text[pos]
        if char == '"':
            return self._string(pos)
        if char == "{":
            return self._object(pos, path)
        if char == "[":
            return self._array(pos, path)
        for word, value in _LITERALS.items():
            if self.text.startswith(word, pos):
                return value, pos + len(word)
        match = _NUMBER.match(self.text, pos)
        if match:
            return json.loads(match.group()), match.end()
        raise self._fail(pos, f"unexpected character {char!r}")

    def _string(self, pos: int) -> tuple[str, int]:
        try:
            return _scanstring(self.text, pos + 1, True)
        except json.JSONDecodeError as exc:
            raise self._fail(pos, exc.msg) from None

    def _object(self, pos: int, path: JSONPath) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}
        pos = self._skip(pos + 1)
        if self.text.startswith("}", pos):
            return result, pos + 1
        while True:
            if not self.text.startswith('"', pos):
                raise self._fail(pos, "expected a key")
            key, pos = self._string(pos)
            pos = self._skip(pos)
            if not self.text.startswith(":", pos):
                raise self._fail(pos, "expected ':'")
            start = self._skip(pos + 1)
            result[key], pos = self._value(start, path + (key,))
            if key == "source" and len(path) == 2 and path[0] == "cells":
                self.source_spans[path[1]] = _Span(start, pos)
            pos = self._skip(pos)
            if self.text.startswith(",", pos):
                pos = self._skip(pos + 1)
            elif self.text.startswith("}", pos):
                return result, pos + 1
            else:
                raise self._fail(pos, "expected ',' or '}'")

    def _array(self, pos: int, path: JSONPath) -> tuple[list[Any], int]:
        result: list[Any] = []
        pos = self._skip(pos + 1)
        if self.text.startswith("]", pos):
            return result, pos + 1
        while True:
            value, pos = self._value(pos, path + (len(result),))
            result.append(value)
            pos = self._skip(pos)
            if self.text.startswith(",", pos):
                pos = self._skip(pos + 1)
            elif self.text.startswith("]", pos):
                return result, pos + 1
            else:
                raise self._fail(pos, "expected ',' or ']'")


# --- IPython syntax: hidden from the parser without moving any line. ---

_CELL_MAGIC = re.compile(r"\s*%%(\w+)")
# Cell magics whose body is Python (the same list ruff checks); a cell under any other cell
# magic (%%bash, %%html, %%writefile...) is another language, or data, and is skipped.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})
_LINE_MAGIC = re.compile(r"(?P<indent>[ \t]*)(?:[%!?]|[\w.]+\s*=\s*[%!])")
_HELP = re.compile(r"[ \t]*[\w.]+\?\??\s*$")
# IPython's automagics and default shell aliases, written without `%` (`ls ./data`, `pip install x`,
# `cd ..`), read only in a cell that is no valid Python: the name, then an argument (not `=`, `(`...).
_AUTOMAGIC = re.compile(
    r"[ \t]*(?:ls|ll|cd|pwd|pip|conda|mkdir|rmdir|rm|cp|mv|cat|less|more|man|clear|env|time|timeit|"
    r"load_ext|matplotlib|pylab|who|whos|reset|run|mamba|uv)"
    r"(?:[ \t]+[^ \t=(\[,:;]|[ \t]*$)"
)


@dataclass
class _Masked:
    code: str
    token: str
    originals: dict[int, str]  # placeholder number -> the line it replaced (without newline)
    indents: dict[int, str] = field(default_factory=dict)  # placeholder number -> its indent
    # IPython runs a cell whose first line is indented with that indent taken off every line that
    # has it: the indent, and the (1-based) rows that lost it.
    dedent: str = ""
    dedented_rows: frozenset[int] = frozenset()


def _lines(source: str) -> list[str]:
    """The lines with their endings, at Python's own line breaks only (str.splitlines would also
    break on \f and U+2028)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", source)


def _leading_indent(source: str) -> tuple[str, str, frozenset[int]]:
    """The cell as IPython runs it when its first line is indented (its indent removed from every
    line that starts with it), the indent, and the rows that lost it."""
    lines = _lines(source)
    first = next((line for line in lines if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if not indent:
        return source, "", frozenset()
    rows = frozenset(row for row, line in enumerate(lines, 1) if line.startswith(indent))
    return "".join(line[len(indent):] if line.startswith(indent) else line for line in lines), indent, rows


def _parses(code: str) -> bool:
    try:
        compile(code, "<cell>", "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _mask(source: str) -> Optional[_Masked]:
    """Replace IPython-only lines by numbered `pass` placeholders; None for a non-Python cell."""
    token = "accumlint_magic_" + secrets.token_hex(4)
    magic = _CELL_MAGIC.match(source)
    if magic and magic.group(1) not in PYTHON_CELL_MAGICS:
        return None
    if _parses(source):
        return _Masked(source, token, {})
    # Maybe IPython syntax: mask it below, or let the engine report the real error.
    dedented, dedent, rows = _leading_indent(source)
    if dedent:
        inner = _mask(dedented)
        if inner is not None and _parses(inner.code):
            return replace(inner, dedent=dedent, dedented_rows=rows)
    lines = _lines(source)
    originals: dict[int, str] = {}
    indents: dict[int, str] = {}
    continuing: Optional[str] = None  # indent of a magic continued with a backslash
    for index, line in enumerate(lines):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        indent = continuing
        if indent is None:
            match = _LINE_MAGIC.match(body)
            if match or _HELP.match(body) or _AUTOMAGIC.match(body):
                indent = body[: len(body) - len(body.lstrip(" \t"))]
        if indent is None:
            continue
        number = len(originals)
        originals[number] = body
        indents[number] = indent
        lines[index] = f"{indent}pass  # {token}_{number}{ending}"
        continuing = indent if body.endswith("\\") else None
    return _Masked("".join(lines), token, originals, indents)


def _unmask(code: str, masked: _Masked) -> Optional[str]:
    """Put each original line back where its placeholder ended up; None if one went missing."""
    if not masked.originals:
        return code
    pattern = re.compile(rf"(?m)^([ \t]*)pass  # {masked.token}_(\d+)(?=\r?$)")
    seen: list[int] = []

    def restore(match: re.Match[str]) -> str:
        number = int(match.group(2))
        seen.append(number)
        original, indent = masked.originals[number], masked.indents[number]
        # A fix may have re-indented the placeholder: shift the magic (and continuations) along.
        if match.group(1) != indent and original.startswith(indent):
            return match.group(1) + original[len(indent):]
        return original

    restored = pattern.sub(restore, code)
    if sorted(seen) != sorted(masked.originals):
        return None  # a fix moved or dropped a magic: safer not to fix this cell
    return restored


# --- Checking and fixing. ---


@dataclass
class CellResult:
    index: int  # 0-based position among all cells
    result: FileResult

    @property
    def number(self) -> int:
        return self.index + 1


@dataclass
class NotebookResult:
    filename: str
    cells: list[CellResult] = field(default_factory=list)
    error: Optional[FileError] = None

    def findings(self) -> list[Finding]:
        """Every cell's findings, each with its cell number; rows relative to the cell."""
        found: list[Finding] = []
        for cell in self.cells:
            found.extend(replace(f, filename=self.filename, cell=cell.number) for f in cell.result.findings)
        return found

    def errors(self) -> list[FileError]:
        errors = [self.error] if self.error else []
        for cell in self.cells:
            if cell.result.error:
                errors.append(FileError(self.filename, cell.result.error.message, cell=cell.number))
        return errors

    def as_file_result(self) -> FileResult:
        """One FileResult for the whole notebook; several failing cells are named in one message."""
        result = FileResult(self.filename, findings=self.findings())
        for cell in self.cells:  # the project modules any cell's findings rest on, and its warnings
            result.dependencies.update(cell.result.dependencies)
            result.notices.extend(replace(notice, cell=cell.number) for notice in cell.result.notices)
        errors = self.errors()
        message = "; ".join(e.message if e.cell is None or len(errors) == 1 else f"cell {e.cell}: {e.message}" for e in errors)
        checked = sum(1 for cell in self.cells if not cell.result.error)
        if errors and self.error is None and checked:  # a shell line or pasted output spoils only its own cell
            message += f" (the other {checked} code {'cell was' if checked == 1 else 'cells were'} checked)"
        if errors:
            result.error = FileError(self.filename, message, cell=errors[0].cell)
        return result


@dataclass
class _Notebook:
    text: str
    cells: list[dict[str, Any]]
    spans: dict[int, _Span]


def _load(raw: bytes) -> _Notebook:
    try:
        text = raw.decode("utf-8")  # nbformat: notebooks are UTF-8 JSON
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        raise NotebookError("starts with a byte-order mark, which JSON does not allow")
    reader = _Reader(text)
    try:
        data = reader.parse()
    except RecursionError:
        raise NotebookError("JSON nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a notebook: no list of cells (nbformat 4 is required)")
    cells = data["cells"] if _is_python(data.get("metadata")) else []
    return _Notebook(text, cells, reader.source_spans)


def _is_python(metadata: Any) -> bool:
    # An R or Julia notebook has code cells too; only Python ones are ours. No metadata: assume.
    info = metadata.get("language_info") if isinstance(metadata, dict) else None
    name = info.get("name", "python") if isinstance(info, dict) else "python"
    return str(name).lower() in ("python", "python3", "ipython")


def _code_cells(notebook: _Notebook) -> Iterator[tuple[int, str]]:
    for index, cell in enumerate(notebook.cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if isinstance(source, str) and source.strip():
            yield index, source


def code_cells(raw: bytes) -> list[tuple[int, str]]:
    """(1-based cell number, source) of each Python code cell that is checked; [] if unreadable."""
    try:
        notebook = _load(raw)
    except NotebookError:
        return []
    return [(index + 1, source) for index, source, _ in _masked_cells(notebook)]


def _masked_cells(notebook: _Notebook) -> list[tuple[int, str, _Masked]]:
    """(index, source, masked) of each Python code cell, masked once for every use."""
    cells = []
    for index, source in _code_cells(notebook):
        masked = _mask(source)
        if masked is not None:
            cells.append((index, source, masked))
    return cells


def _notebook_imports(cells: list[tuple[int, str, _Masked]]) -> dict[str, str]:
    """What the notebook imports in any cell: its cells share one namespace, so a loop in one cell
    uses the frameworks imported in another (which framework decides what holds a graph)."""
    from accumlint.analysis.collect import imports_of

    imports: dict[str, str] = {}
    for _, _, masked in cells:
        try:
            module = ast.parse(masked.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # reported when the cell itself is checked
        imports.update(imports_of(module))
    return imports


def check_notebook(
    raw: bytes, filename: str, select: Optional[Collection[str]] = None, with_edits: bool = True
) -> NotebookResult:
    """Check every Python code cell. Never raises on bad input."""
    result = NotebookResult(filename)
    try:
        notebook = _load(raw)
    except NotebookError as exc:
        result.error = FileError(filename, str(exc))
        return result
    cells = _masked_cells(notebook)
    imports = _notebook_imports(cells)
    for index, _, masked in cells:
        codes = _engine().ALL_CODES if select is None else select
        cell_result = _engine().check_source(masked.code, filename, codes, with_edits, imports=imports)
        if masked.dedent:
            cell_result.findings = [_reindented(finding, masked) for finding in cell_result.findings]
        result.cells.append(CellResult(index, cell_result))
    return result


def _reindented(finding: Finding, masked: _Masked) -> Finding:
    """A finding in a cell that was checked dedented, placed back in the cell as written. Its fix
    is dropped: `--fix` leaves such cells alone (their blank lines' indents cannot be restored)."""
    def back(location: Location) -> Location:
        shift = len(masked.dedent) if location.row in masked.dedented_rows else 0
        return Location(location.row, location.column + shift)

    return replace(finding, location=back(finding.location), end_location=back(finding.end_location), fix=None)


def fix_notebook(
    raw: bytes, unsafe: bool = False, select: Optional[Collection[str]] = None, filename: str = "<notebook>"
) -> Optional[bytes]:
    """The notebook with its fixable cells rewritten, or None when nothing changes.

    Only the `source` values of fixed cells are replaced, in the original text, written the way
    the notebook wrote them; every other byte stays as it was.
    """
    try:
        notebook = _load(raw)
    except NotebookError:
        return None
    edits: list[tuple[_Span, str]] = []
    cells = _masked_cells(notebook)
    imports = _notebook_imports(cells)
    for index, source, masked in cells:
        span = notebook.spans.get(index)
        if span is None:
            continue
        codes = _engine().ALL_CODES if select is None else select
        if masked.dedent:
            continue  # checked as IPython runs it, but not rewritten (see _reindented)
        fixed = _engine().fix_source(masked.code, filename, codes, unsafe, imports=imports)
        if fixed.error or not isinstance(fixed.fixed_source, str):
            continue
        new_source = _unmask(fixed.fixed_source, masked)
        if new_source is None or new_source == source:
            continue
        old_text = notebook.text[span.start:span.end]
        edits.append((span, _serialise_like(old_text, new_source, notebook.text)))
    if not edits:
        return None
    text = notebook.text
    for span, replacement in sorted(edits, key=lambda edit: edit[0].start, reverse=True):
        text = text[: span.start] + replacement + text[span.end :]
    return text.encode("utf-8")


def _string(value: str, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


def _serialise_like(old: str, source: str, whole: str) -> str:
    """Write `source` as a JSON value in the same shape as `old`: one string or a list of lines."""
    # Escape non-ASCII only when the notebook itself does (all ASCII, yet \\u escapes present).
    ascii_only = whole.isascii() and "\\u" in whole
    if old.startswith('"'):
        return _string(source, ascii_only)
    # nbformat splits on "\n" only; str.splitlines would also split on \f, \x1c, U+2028...
    parts = source.split("\n")
    lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    items = [_string(line, ascii_only) for line in lines]
    if not items:
        return "[]"
    first, gap, closing = _list_layout(old)
    return "[" + first + gap.join(items) + closing + "]"


def _list_layout(old: str) -> tuple[str, str, str]:
    """What comes after `[`, between two items (the comma and its spaces), and before `]`."""
    pos = _WS.match(old, 1).end()  # type: ignore[union-attr]
    first = old[1:pos]
    gap = None
    closing = ""
    while pos < len(old) and old[pos] == '"':
        _value, pos = _scanstring(old, pos + 1, True)
        after = _WS.match(old, pos).end()  # type: ignore[union-attr]
        if old.startswith(",", after):
            following = _WS.match(old, after + 1).end()  # type: ignore[union-attr]
            if gap is None:
                gap = old[pos:following]
            pos = following
        else:
            closing = old[pos:after]
            break
    # A one-line list shows no separator: lay a longer one out the way it opens.
    return first, "," + first if gap is None else gap, closing


# --- Where a cell position lies in the .ipynb text (for annotations that point into the file). ---


def _raw_offsets(text: str, span: _Span) -> list[int]:
    """For each character of the cell's decoded source, its offset in the JSON text (plus one
    entry for the end). The source is one JSON string or a list of them."""
    offsets: list[int] = []
    pos = span.start
    while pos < span.end:
        if text[pos] != '"':
            pos += 1
            continue
        pos += 1  # inside a string until the closing quote
        while pos < span.end and text[pos] != '"':
            offsets.append(pos)
            if text[pos] != "\\":
                pos += 1
            elif text[pos + 1] != "u":
                pos += 2
            elif (0xD800 <= int(text[pos + 2 : pos + 6], 16) < 0xDC00 and text.startswith("\\u", pos + 6)
                  and 0xDC00 <= int(text[pos + 8 : pos + 12], 16) < 0xE000):
                pos += 12  # a surrogate pair: one character
            else:
                pos += 6
        pos += 1
    offsets.append(pos)
    return offsets


class NotebookIndex:
    """Maps (cell, row, column) of a finding to (line, column) of the `.ipynb` text."""

    def __init__(self, raw: bytes) -> None:
        self._notebook: Optional[_Notebook] = None
        try:
            self._notebook = _load(raw)
        except NotebookError:
            return
        text = self._notebook.text
        self._line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
        self._cells: dict[int, tuple[list[int], list[int]]] = {}

    def _cell(self, number: int) -> Optional[tuple[list[int], list[int]]]:
        if self._notebook is None:
            return None
        if number not in self._cells:
            span = self._notebook.spans.get(number - 1)
            if span is None:
                return None
            offsets = _raw_offsets(self._notebook.text, span)
            decoded, _ = json.decoder.JSONDecoder().raw_decode(self._notebook.text, span.start)
            source = "".join(decoded) if isinstance(decoded, list) else str(decoded)
            starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
            self._cells[number] = (offsets, starts)
        return self._cells[number]

    def locate(self, cell: int, location: Location) -> Optional[Location]:
        """The place in the file, or None when the cell cannot be found there."""
        found = self._cell(cell)
        if found is None:
            return None
        offsets, starts = found
        row = min(max(location.row, 1), len(starts))
        index = min(starts[row - 1] + location.column - 1, len(offsets) - 1)
        raw = offsets[index]
        line = bisect_right(self._line_starts, raw) - 1
        return Location(line + 1, raw - self._line_starts[line] + 1)
