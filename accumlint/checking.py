"""Fix (or diff) one file on disk: read it, call the engine, write atomically.

Plain checking goes through accumlint.parallel.check_files, which adds the cache and workers."""

from __future__ import annotations

import difflib
import io
import tokenize
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Collection, Optional

from accumlint.model import FileError, FileResult, Finding
from accumlint.parallel import read_source
from accumlint.writer import ChangedOnDisk, atomic_write


def _engine():
    # Imported on first use: LibCST costs a third of a second, which warm runs do not pay.
    from accumlint import engine

    return engine


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # apply fixes (write them, unless diff)
    diff: bool = False  # compute fixes, show them as a diff, write nothing
    unsafe_fixes: bool = False
    count_fixed: bool = False  # also count fixed findings per code (for --show-fixes)

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff

    def applicable(self, finding: Finding) -> bool:
        if finding.fix is None:
            return False
        return finding.fix.applicability == "safe" or self.unsafe_fixes


@dataclass
class Outcome:
    result: FileResult
    diff: str = ""
    fixed_codes: Counter = field(default_factory=Counter)
    traceback: Optional[str] = None  # set for internal errors (bugs), shown with --verbose


# How each kind of file is checked, by suffix; anything else is read as Python source.
Handler = Callable[[str, bytes, Collection[str], Mode], Outcome]


def _python(filename: str, data: bytes, select: Collection[str], mode: Mode) -> Outcome:
    if not mode.fixing:
        return Outcome(_engine().check_source(data, filename, select))
    result = _engine().fix_source(data, filename, select, unsafe_fixes=mode.unsafe_fixes)
    outcome = Outcome(result)
    if result.error is not None or result.fixed_source is None:
        return outcome
    fixed = result.fixed_source
    fixed = fixed if isinstance(fixed, bytes) else fixed.encode("utf-8")
    if mode.count_fixed:
        before = Counter(f.code for f in _engine().check_source(data, filename, select).findings)
        outcome.fixed_codes = before - Counter(f.code for f in result.findings)
    return _deliver(outcome, filename, data, fixed, select, mode,
                    lambda: _engine().check_source(data, filename, select))


def _deliver(outcome: Outcome, filename: str, data: bytes, fixed: bytes, select, mode: Mode,
             unfixed: Callable[[], FileResult]) -> Outcome:
    """Show the fixed bytes as a diff, or write them; if writing fails, report the file as is."""
    if mode.diff:
        outcome.diff = unified_diff(filename, data, fixed)
        return outcome
    try:
        atomic_write(filename, fixed, expected=data)
    except (OSError, ChangedOnDisk) as exc:
        cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        result = unfixed()
        result.error = FileError(filename, f"cannot write fixes: {cause}")
        return Outcome(result)
    return outcome


def _notebook(filename: str, data: bytes, select: Collection[str], mode: Mode) -> Outcome:
    from accumlint.notebook import check_notebook, fix_notebook

    before = check_notebook(data, filename, select).as_file_result()
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
    return _deliver(outcome, filename, data, fixed, select, mode, lambda: before)


HANDLERS: dict[str, Handler] = {".ipynb": _notebook}


def run_file(filename: str, select: Collection[str], mode: Mode) -> Outcome:
    """Never raises: unreadable files and internal errors come back as FileResult.error."""
    data = read_source(filename)
    if isinstance(data, FileError):
        return Outcome(FileResult(filename, error=data))
    suffix = filename[filename.rfind(".") :].lower() if "." in filename else ""
    handler = HANDLERS.get(suffix, _python)
    try:
        return handler(filename, data, select, mode)
    except Exception as exc:  # a bug in accumlint, not in the user's file
        message = f"internal error: {type(exc).__name__}: {exc}"
        return Outcome(FileResult(filename, error=FileError(filename, message)), traceback=traceback.format_exc())


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
