"""Check and fix one source text: parse once, analyse once, run the rules, locate, suppress."""

from __future__ import annotations

import ast
import re
from typing import Collection, Optional, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from accumlint.analysis import analyse
from accumlint.fixer import apply_changes, compatible_fixes, merge, text_edits
from accumlint.model import FileError, FileResult, Finding, FixSummary, Location, Violation
from accumlint.registry import RULES
from accumlint.rules import RULE_CHECKS

Source = Union[str, bytes]

ALL_CODES = frozenset(RULES)
MAX_FIX_ROUNDS = 8

# Every rule needs a backward pass or an optimizer step in sight; files without either are
# only syntax-checked (with the fast C parser), never analysed.
_TRIGGERS = ("backward", "step(")

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.I)


class SourceError(Exception):
    """The text cannot be checked; the message is one line naming the cause."""


def _text(source: Source) -> str:
    if isinstance(source, str):
        return source
    try:
        return cst.parse_module(source).code
    except Exception:  # decoding problems surface again, precisely, in _parse
        return source.decode("utf-8", errors="replace")


def _parse(source: Source) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # CPython's parser words syntax errors best; LibCST's message is the fallback for
        # code that CPython accepts but LibCST cannot read.
        _quick_syntax_check(source, "<checked file>")
        raise SourceError(f"cannot parse at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}") from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise SourceError(f"cannot decode: {exc}") from None
    except RecursionError:
        raise SourceError("expression nested too deeply to parse") from None


def _quick_syntax_check(source: Source, filename: str) -> None:
    try:
        compile(source, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise SourceError(f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
    except (ValueError, UnicodeDecodeError) as exc:  # null bytes, undecodable text
        raise SourceError(f"cannot parse: {exc}") from None
    except (RecursionError, MemoryError):
        raise SourceError("expression nested too deeply to parse") from None


def _might_have_findings(source: Source) -> bool:
    if isinstance(source, bytes):
        return any(word.encode() in source for word in _TRIGGERS)
    return any(word in source for word in _TRIGGERS)


def _suppressed(line: str, code: str) -> bool:
    match = _NOQA.search(line)
    if not match:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    return code.upper() in {c.upper() for c in re.split(r"[\s,]+", codes.strip())}


def _violations(module: cst.Module, select: Collection[str]) -> list[Violation]:
    facts = analyse(module)
    found: list[Violation] = []
    for code, check in RULE_CHECKS.items():
        if code in select:
            found.extend(check(facts))
    return found


class _Located:
    """Positions are computed only for files that have something to report."""

    def __init__(self, module: cst.Module) -> None:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(PositionProvider)
        self.lines = module.code.splitlines()

    def range_of(self, node: cst.CSTNode) -> tuple[Location, Location]:
        span = self.positions[node]
        return (
            Location(span.start.line, span.start.column + 1),
            Location(span.end.line, span.end.column + 1),
        )

    def noqa(self, violation: Violation, start: Location) -> bool:
        row = start.row - 1
        return 0 <= row < len(self.lines) and _suppressed(self.lines[row], violation.code)


def _located_violations(
    module: cst.Module, select: Collection[str]
) -> list[tuple[Violation, Location, Location]]:
    violations = _violations(module, select)
    if not violations:
        return []
    located = _Located(module)
    kept = []
    for violation in violations:
        start, end = located.range_of(violation.node)
        if not located.noqa(violation, start):
            kept.append((violation, start, end))
    kept.sort(key=lambda item: (item[1].row, item[1].column, item[0].code))
    return kept


def _finding(module: cst.Module, filename: str, violation: Violation, start, end) -> Finding:
    summary: Optional[FixSummary] = None
    if violation.fix is not None:
        fixed = apply_changes(module, violation.fix.changes)
        summary = FixSummary(
            message=violation.fix.message,
            applicability=violation.fix.applicability,
            edits=text_edits(module.code, fixed.code),
        )
    return Finding(
        code=violation.code,
        message=violation.message,
        filename=filename,
        location=start,
        end_location=end,
        fix=summary,
        url=RULES[violation.code].url,
    )


def _check_module(module: cst.Module, filename: str, select: Collection[str]) -> list[Finding]:
    return [
        _finding(module, filename, violation, start, end)
        for violation, start, end in _located_violations(module, select)
    ]


def check_source(source: Source, filename: str, select: Collection[str] = ALL_CODES) -> FileResult:
    """Report the findings in one file's text. Never raises on bad input."""
    result = FileResult(filename=filename)
    try:
        if not _might_have_findings(source):
            _quick_syntax_check(source, filename)
            return result
        module = _parse(source)
        result.findings = _check_module(module, filename, select)
    except SourceError as exc:
        result.error = FileError(filename, str(exc))
    return result


def _render(module: cst.Module, like: Source) -> Source:
    return module.bytes if isinstance(like, bytes) else module.code


def fix_source(
    source: Source,
    filename: str,
    select: Collection[str] = ALL_CODES,
    unsafe_fixes: bool = False,
) -> FileResult:
    """Apply every applicable fix until none is left; report what remains.

    `fixed_source` is None when nothing changed, else the new text in the input's type.
    """
    result = FileResult(filename=filename)
    allowed = {"safe", "unsafe"} if unsafe_fixes else {"safe"}
    try:
        if not _might_have_findings(source):
            _quick_syntax_check(source, filename)
            return result
        module = _parse(source)
        original = module
        for _ in range(MAX_FIX_ROUNDS):
            fixes = [
                violation.fix
                for violation, _start, _end in _located_violations(module, select)
                if violation.fix is not None and violation.fix.applicability in allowed
            ]
            chosen = compatible_fixes(fixes)
            if not chosen:
                break
            rewritten = apply_changes(module, merge(chosen))
            # Re-parse what we wrote: the next round must see real positions, and a fix that
            # produced text which does not parse must never reach the disk.
            try:
                module = cst.parse_module(_render(rewritten, source))
            except cst.ParserSyntaxError:
                raise SourceError("a fix produced code that does not parse; file left unchanged")
            result.fixes_applied += len(chosen)
        result.findings = _check_module(module, filename, select)
        if module.code != original.code:
            result.fixed_source = _render(module, source)
    except SourceError as exc:
        result.error = FileError(filename, str(exc))
        result.fixed_source = None
    return result
