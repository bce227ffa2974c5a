"""Check and fix one source text: parse once, analyse once, run the rules, locate, suppress."""

from __future__ import annotations

import ast
import re
from typing import Collection, Optional, Union

import libcst as cst

from accumlint.analysis import analyse
from accumlint.fixer import apply_changes, compatible_fixes, merge, text_edits
from accumlint.positions import Positions
from accumlint.model import FileError, FileResult, Finding, FixSummary, Location, Violation
from accumlint.registry import RULES
from accumlint.rules import RULE_CHECKS

Source = Union[str, bytes]

ALL_CODES = frozenset(RULES)
MAX_FIX_ROUNDS = 8
MAX_LINES = 100_000  # LibCST's time grows faster than linearly on huge generated files

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


def _parse(source: Source, filename: str) -> cst.Module:
    # CPython's parser first: it refuses in milliseconds the deeply nested input on which
    # LibCST's recursive parser crashes the process or runs for minutes.
    _quick_syntax_check(source, filename)
    lines = source.count(b"\n" if isinstance(source, bytes) else "\n")
    if lines > MAX_LINES:
        raise SourceError(f"too large to analyse: {lines} lines (the limit is {MAX_LINES})")
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # CPython's parser words syntax errors best; LibCST's message is the fallback for
        # code that CPython accepts but LibCST cannot read.
        raise SourceError(f"cannot parse at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}") from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        raise SourceError(f"cannot decode: {exc}") from None
    except RecursionError:
        raise SourceError("expression nested too deeply to parse") from None


def _quick_syntax_check(source: Source, filename: str) -> None:
    try:
        compile(source, filename, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        if not exc.lineno:  # raised before any line was read: an encoding problem
            raise SourceError(f"cannot decode: {exc.msg}") from None
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
    """Positions and noqa comments, looked up only for files that have something to report."""

    def __init__(self, module: cst.Module) -> None:
        self.positions = Positions(module)
        self.lines = module.code.splitlines()

    def range_of(self, node: cst.CSTNode) -> tuple[Location, Location]:
        start_line, start_column, end_line, end_column = self.positions.span(node)
        return Location(start_line, start_column + 1), Location(end_line, end_column + 1)

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


def _finding(module: cst.Module, filename: str, violation: Violation, start, end, with_edits: bool) -> Finding:
    summary: Optional[FixSummary] = None
    if violation.fix is not None:
        # Rendering a fix's edits rewrites the whole module: only when the output shows them.
        edits = text_edits(module.code, apply_changes(module, violation.fix.changes).code) if with_edits else ()
        summary = FixSummary(
            message=violation.fix.message,
            applicability=violation.fix.applicability,
            edits=edits,
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


def _check_module(
    module: cst.Module, filename: str, select: Collection[str], with_edits: bool = True
) -> list[Finding]:
    return [
        _finding(module, filename, violation, start, end, with_edits)
        for violation, start, end in _located_violations(module, select)
    ]


def check_source(
    source: Source, filename: str, select: Collection[str] = ALL_CODES, with_edits: bool = True
) -> FileResult:
    """Report the findings in one file's text. Never raises on bad input.

    `with_edits=False` leaves each fix's `edits` empty (its message and safety stay): text output
    does not show them and computing them costs a rewrite of the module per fix."""
    result = FileResult(filename=filename)
    try:
        if not _might_have_findings(source):
            _quick_syntax_check(source, filename)
            return result
        module = _parse(source, filename)
        result.findings = _check_module(module, filename, select, with_edits)
    except SourceError as exc:
        result.error = FileError(filename, str(exc))
    except RecursionError:
        result.error = FileError(filename, "expression nested too deeply to analyse")
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
        module = _parse(source, filename)
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
    except RecursionError:
        result.error = FileError(filename, "expression nested too deeply to analyse")
        result.fixed_source = None
    return result
