"""Check, fix or diff one file's bytes: the per-file step of the runner (accumlint.runner).

A Python file goes to the engine whole, a notebook cell by cell (accumlint.notebook). Before
either, the file's `# noqa` comments are read: malformed ones become notices, and a file-level
`# accumlint: noqa` narrows (or empties) the selection, so it holds for fixes as well as findings.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
import traceback
from collections import Counter
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable, Collection, Optional

from accumlint import noqa
from accumlint.model import FileError, FileResult, Finding, Notice
from accumlint.writer import ChangedOnDisk, atomic_write


def _engine() -> ModuleType:
    # Imported on first use: the analysis modules cost time that warm runs need not pay.
    from accumlint import engine

    return engine


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # apply fixes (write them, unless diff)
    diff: bool = False  # compute fixes, show them as a diff, write nothing
    unsafe_fixes: bool = False
    count_fixed: bool = False  # also count fixed findings per code (for --show-fixes)
    with_edits: bool = True  # render each fix's text edits (JSON, SARIF, editors need them)
    write: bool = True  # with fix: write the file (False for stdin: the fixed text is returned)

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff

    @property
    def cache_kind(self) -> str:
        """What besides the bytes and the selection decides a cached result."""
        if self.fixing:
            return "fix-unsafe" if self.unsafe_fixes else "fix-safe"
        return "check" if self.with_edits else "check-no-edits"

    def applicable(self, finding: Finding) -> bool:
        if finding.fix is None:
            return False
        return finding.fix.applicability == "safe" or self.unsafe_fixes


@dataclass
class Outcome:
    result: FileResult
    diff: str = ""
    fixed_codes: Counter[str] = field(default_factory=Counter)
    traceback: Optional[str] = None  # set for internal errors (bugs), shown with --verbose
    fixed: Optional[bytes] = None  # the fixed bytes, when fixing without writing (stdin)
    cacheable: bool = True  # False when the result says something about this run, not the bytes


def is_notebook(filename: str) -> bool:
    return filename.lower().endswith(".ipynb")


# -- the file's own say: noqa ---------------------------------------------------------------


# A `noqa` whose line mentions `acc` somewhere after it: the only kind that can be ours.
_OURS_AFTER_NOQA = re.compile(rb"noqa[^\n]*acc")


@dataclass
class _Scope:
    select: frozenset[str]
    notices: list[Notice]


def _scope(filename: str, data: bytes, select: Collection[str]) -> _Scope:
    """The codes to check after the file-level `# accumlint: noqa`, and the noqa notices."""
    lower = data.lower()
    if b"noqa" not in lower:
        return _Scope(frozenset(select), [])
    if b"accumlint" not in lower and _OURS_AFTER_NOQA.search(lower) is None:
        # Other tools' directives (`# noqa: E501`) silence nothing of ours and draw no warning:
        # no need to tokenize the file to find them.
        return _Scope(frozenset(select), [])
    if is_notebook(filename):
        from accumlint.notebook import code_cells

        texts: list[tuple[Optional[int], str]] = [(cell, text) for cell, text in code_cells(data)]
    else:
        texts = [(None, _decode(data))]
    notices: list[Notice] = []
    directives: list[noqa.Directive] = []
    for cell, text in texts:  # a directive in any cell covers the whole notebook
        notices.extend(Notice(filename, row, message, cell) for row, message in noqa.problems(text))
        found = noqa.file_directive(text)
        if found is not None:
            directives.append(found)
    if not directives:
        return _Scope(frozenset(select), notices)
    if any(d.codes is None for d in directives):
        return _Scope(frozenset(), notices)
    silenced = frozenset().union(*(d.codes or frozenset() for d in directives))
    return _Scope(frozenset(select) - silenced, notices)

# -- Python files and notebooks -------------------------------------------------------------


def _python(filename: str, data: bytes, select: frozenset[str], mode: Mode) -> Outcome:
    engine = _engine()
    if not mode.fixing:
        return Outcome(engine.check_source(data, filename, select, mode.with_edits))
    result = engine.fix_source(data, filename, select, unsafe_fixes=mode.unsafe_fixes)
    outcome = Outcome(result)
    if result.error is not None or result.fixed_source is None:
        return outcome
    fixed = result.fixed_source
    fixed_bytes = fixed if isinstance(fixed, bytes) else fixed.encode("utf-8")
    if mode.count_fixed:
        before = Counter(f.code for f in engine.check_source(data, filename, select).findings)
        outcome.fixed_codes = before - Counter(f.code for f in result.findings)
    return _deliver(outcome, filename, data, fixed_bytes, mode, lambda: engine.check_source(data, filename, select))


def _notebook(filename: str, data: bytes, select: frozenset[str], mode: Mode) -> Outcome:
    from accumlint.notebook import check_notebook, fix_notebook

    before = check_notebook(data, filename, select, mode.with_edits).as_file_result()
    if not mode.fixing or before.error is not None:
        return Outcome(before)
    fixed = fix_notebook(data, mode.unsafe_fixes, select, filename)
    if fixed is None:
        return Outcome(before)
    after = check_notebook(fixed, filename, select).as_file_result()
    # The notebook fixer does not count its fixes: count the findings that went away.
    gone = Counter(f.code for f in before.findings) - Counter(f.code for f in after.findings)
    after.fixes_applied = sum(gone.values())
    outcome = Outcome(after, fixed_codes=gone if mode.count_fixed else Counter())
    return _deliver(outcome, filename, data, fixed, mode, lambda: before)


def _deliver(outcome: Outcome, filename: str, data: bytes, fixed: bytes, mode: Mode,
             unfixed: Callable[[], FileResult]) -> Outcome:
    """Show the fixed bytes as a diff, hand them back, or write them; if writing fails, report
    the file as it is."""
    if mode.diff:
        outcome.diff = unified_diff(filename, data, fixed)
        return outcome
    if not mode.write:
        outcome.fixed = fixed
        return outcome
    try:
        atomic_write(filename, fixed, expected=data)
    except (OSError, ChangedOnDisk) as exc:
        cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        result = unfixed()
        result.error = FileError(filename, f"cannot write fixes: {cause}")
        return Outcome(result, cacheable=False)
    return outcome


def process(filename: str, data: bytes, select: Collection[str], mode: Mode) -> Outcome:
    """Check (or fix) one file's bytes. Never raises: an accumlint bug costs one file, not the run."""
    try:
        scope = _scope(filename, data, select)
        handler = _notebook if is_notebook(filename) else _python
        if not scope.select:
            outcome = Outcome(FileResult(filename))  # `# accumlint: noqa`: nothing to check
        else:
            outcome = handler(filename, data, scope.select, mode)
        outcome.result.notices = scope.notices + outcome.result.notices
        return outcome
    except RecursionError:
        return Outcome(FileResult(filename, error=FileError(filename, "expression nested too deeply to check")))
    except Exception as exc:  # a bug in accumlint, not in the user's file
        message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        return Outcome(FileResult(filename, error=FileError(filename, message)), traceback=traceback.format_exc(),
                       cacheable=False)


def _decode(data: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", errors="replace")


def unified_diff(filename: str, before: bytes, after: bytes) -> str:
    lines = difflib.unified_diff(
        _decode(before).splitlines(keepends=True),
        _decode(after).splitlines(keepends=True),
        fromfile=filename,
        tofile=filename,
    )
    out = []
    for line in lines:
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)
