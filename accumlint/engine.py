"""Check and fix one source text: decode, parse once with CPython's `ast`, analyse once, run the
rules, locate, suppress. Fixes are text edits on the spans the parser gives."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Optional, Union

from accumlint.analysis import ModuleFacts, analyse
from accumlint.fixer import apply_edits, compatible_fixes, located_edits
from accumlint.model import FileError, FileResult, Finding, FixSummary, Location, Violation
from accumlint.project import ProjectIndex, index_for
from accumlint.registry import RULES
from accumlint.rules import RULE_CHECKS
from accumlint.source import DecodeError, SourceText, decode, encode

Source = Union[str, bytes]

ALL_CODES = frozenset(RULES)
MAX_FIX_ROUNDS = 8

# Every rule needs a backward pass or an optimizer step in sight; files without either are
# only syntax-checked, never analysed.
_TRIGGERS = ("backward", "step(")

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.I)


class SourceError(Exception):
    """The text cannot be checked; the message is one line naming the cause."""


def _decode(source: Source) -> tuple[str, str]:
    try:
        return decode(source)
    except DecodeError as exc:
        raise SourceError(f"cannot decode: {exc}") from None


def parse(text: str, filename: str) -> ast.Module:
    """CPython's parser, its errors worded in one line."""
    try:
        return ast.parse(text, filename)
    except SyntaxError as exc:
        raise SourceError(f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
    except ValueError as exc:  # null bytes
        raise SourceError(f"cannot parse: {exc}") from None
    except (RecursionError, MemoryError):
        raise SourceError("expression nested too deeply to parse") from None


def _might_have_findings(text: str) -> bool:
    return any(word in text for word in _TRIGGERS)


def _suppressed(line: str, code: str) -> bool:
    match = _NOQA.search(line)
    if not match:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    return code.upper() in {c.upper() for c in re.split(r"[\s,]+", codes.strip())}


@dataclass
class _Located:
    violation: Violation
    start: Location
    end: Location


class _Analysis:
    """One parsed and analysed text, and its violations located and filtered by noqa."""

    def __init__(self, text: str, filename: str, select: Collection[str]) -> None:
        self.src = SourceText(text)
        self.module = parse(text, filename)
        self.located: list[_Located] = []
        self.dependencies: dict[str, str] = {}
        if not _might_have_findings(text):
            return
        facts = analyse(self.module, self.src, *_project_of(filename))
        self.dependencies = facts.analysed.dependencies()
        for violation in _violations(facts, select):
            start, end = self.src.span(violation.node)
            located = _Located(violation, Location(*self.src.position(start)), Location(*self.src.position(end)))
            if not _suppressed(self.src.line(located.start.row), violation.code):
                self.located.append(located)
        self.located.sort(key=lambda item: (item.start.row, item.start.column, item.violation.code))

    def findings(self, filename: str, with_edits: bool = True) -> list[Finding]:
        return [self._finding(item, filename, with_edits) for item in self.located]

    def _finding(self, item: _Located, filename: str, with_edits: bool) -> Finding:
        violation = item.violation
        summary: Optional[FixSummary] = None
        if violation.fix is not None:
            summary = FixSummary(
                message=violation.fix.message,
                applicability=violation.fix.applicability,
                edits=located_edits(self.src, violation.fix) if with_edits else (),
            )
        return Finding(
            code=violation.code,
            message=violation.message,
            filename=filename,
            location=item.start,
            end_location=item.end,
            fix=summary,
            url=RULES[violation.code].url,
        )


def _project_of(filename: str) -> tuple[Optional[Path], Optional[ProjectIndex]]:
    """The checked file and its project, when it is a file on disk (not stdin or a test string)."""
    path = Path(filename)
    try:
        if not path.is_file():
            return None, None
    except (OSError, ValueError):
        return None, None
    return path, index_for(path)


def _violations(facts: ModuleFacts, select: Collection[str]) -> list[Violation]:
    found: list[Violation] = []
    for code, check in RULE_CHECKS.items():
        if code in select:
            found.extend(check(facts))
    return found


def _guarded(result: FileResult, work) -> FileResult:
    try:
        work()
    except SourceError as exc:
        result.error = FileError(result.filename, str(exc))
        result.fixed_source = None
    except RecursionError:
        result.error = FileError(result.filename, "expression nested too deeply to analyse")
        result.fixed_source = None
    return result


def check_source(
    source: Source, filename: str, select: Collection[str] = ALL_CODES, with_edits: bool = True
) -> FileResult:
    """Report the findings in one file's text. Never raises on bad input.

    `with_edits=False` leaves each fix's `edits` empty (its message and safety stay): the text
    output does not show them, and the cache need not keep them."""
    result = FileResult(filename=filename)

    def work() -> None:
        text, _ = _decode(source)
        analysis = _Analysis(text, filename, select)
        result.findings = analysis.findings(filename, with_edits)
        result.dependencies = analysis.dependencies

    return _guarded(result, work)


def fix_source(
    source: Source,
    filename: str,
    select: Collection[str] = ALL_CODES,
    unsafe_fixes: bool = False,
) -> FileResult:
    """Apply every applicable fix until none is left; report what remains.

    `fixed_source` is None when nothing changed, else the new text in the input's type."""
    result = FileResult(filename=filename)
    allowed = {"safe", "unsafe"} if unsafe_fixes else {"safe"}

    def work() -> None:
        original, encoding = _decode(source)
        text = original
        analysis = _Analysis(text, filename, select)
        for _ in range(MAX_FIX_ROUNDS):
            fixes = [
                item.violation.fix
                for item in analysis.located
                if item.violation.fix is not None and item.violation.fix.applicability in allowed
            ]
            chosen = compatible_fixes(fixes)
            if not chosen:
                break
            rewritten = apply_edits(text, [edit for fix in chosen for edit in fix.edits])
            if rewritten == text:
                break
            try:
                analysis = _Analysis(rewritten, filename, select)
            except SourceError:
                raise SourceError("a fix produced code that does not parse; file left unchanged") from None
            text = rewritten
            result.fixes_applied += len(chosen)
        result.findings = analysis.findings(filename)
        result.dependencies = analysis.dependencies
        if text != original:
            result.fixed_source = encode(text, encoding) if isinstance(source, bytes) else text

    return _guarded(result, work)
