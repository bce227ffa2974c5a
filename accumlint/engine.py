"""Check and fix one source text: decode, parse once with CPython's `ast`, analyse once, run the
rules, locate, suppress. Fixes are text edits on the spans the parser gives."""

from __future__ import annotations

import ast
import gc
import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Collection, Mapping, Optional, Union

from accumlint import noqa
from accumlint.analysis import ModuleFacts, analyse
from accumlint.fixer import apply_edits, compatible_fixes, located_edits
from accumlint.legacy_grammar import compiles, parse_python
from accumlint.newer_syntax import newer_syntax, running_version
from accumlint.model import NEWER_PYTHON, FileError, FileResult, Finding, Fix, FixSummary, Location, Notice, Violation
from accumlint.project import ProjectIndex, index_for
from accumlint.registry import RULES
from accumlint.rules import RULE_CHECKS
from accumlint.source import DecodeError, SourceText, decode, encode

Source = Union[str, bytes]

ALL_CODES = frozenset(RULES)
MAX_FIX_ROUNDS = 8

# Every rule needs a backward pass, an optimizer step, (ACC002) a loss, an evaluation pass or a
# meter, or (ACC009) a data-parallel wrapping in sight, here or in a project function a loop here
# calls with a loss, an optimizer or a scaler (`loss_scaler(loss, opt, update_grad=...)`), or a
# step method a framework calls; files with none of these words are only syntax-checked, never
# analysed. Words every module uses (`step(`, `+=`, `append(`) are no sign: a denoising loop calls
# `scheduler.step(...)` too.
_TRIGGERS = (
    "backward(", "zero_grad", "optimizer", "optimiser", "scaler", "loss", "retain_graph", "create_graph",
    "apply_gradients", "assign_add", "LossScaleOptimizer", ".gradient(", "gradient_accumulation_steps",
    "train_step", "training_step", "fit_batch", ".eval()", "criterion", "metric", "Meter", "evaluat",
    # a script that wraps the model for data parallelism and hands it to a loop elsewhere (ACC009)
    "DistributedDataParallel", "DDP(", "FullyShardedDataParallel", "fully_shard",
)
_METER = re.compile(r"\bmeters?\b")  # not `parameter`


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
        return parse_python(text, filename)
    except SyntaxError as exc:
        newer = newer_syntax(text, exc.lineno)
        if newer is not None:
            version, what = newer
            raise SourceError(
                f"{NEWER_PYTHON} {version} to parse ({what} at {exc.lineno}:{exc.offset}); "
                f"accumlint runs on {running_version()}"
            ) from None
        raise SourceError(f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
    except ValueError as exc:  # null bytes
        raise SourceError(f"cannot parse: {exc}") from None
    except (RecursionError, MemoryError):
        raise SourceError("expression nested too deeply to parse") from None


def _might_have_findings(text: str) -> bool:
    # `in` first: the regex scans every position of a big file that holds no "meter" at all
    return any(word in text for word in _TRIGGERS) or ("meter" in text and _METER.search(text) is not None)


@dataclass
class _Located:
    violation: Violation
    start: Location
    end: Location

    def filename(self, checked: str) -> str:
        """The file the finding is in, named the way the checked file was (relative or not)."""
        origin = self.violation.origin
        if origin is None:
            return checked
        if os.path.isabs(checked):
            return origin.filename
        relative = os.path.relpath(origin.filename)
        return origin.filename if relative.startswith("..") else relative


class _Analysis:
    """One parsed and analysed text, and its violations located and filtered by noqa.

    With `verify`, every fix is tried before anyone sees it: the fixed text must compile, lose
    the fix's own finding and gain no other. A fix that fails is withheld (the finding stays,
    without it) and named in `withheld`: (row, code, why)."""

    def __init__(
        self,
        text: str,
        filename: str,
        select: Collection[str],
        verify: bool = True,
        imports: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.src = SourceText(text)
        self.imports = imports
        path, index = _project_of(filename)
        known = index.parsed(path, text) if index is not None and path is not None and imports is None else None
        self.module = known.tree if known is not None else parse(text, filename)
        self.located: list[_Located] = []
        self.dependencies: dict[str, str] = {}
        self.withheld: list[tuple[int, str, str]] = []
        if not _might_have_findings(text):
            return
        facts = analyse(self.module, self.src, path, index, imports=imports)
        self.dependencies = facts.analysed.dependencies()
        seen: set[tuple[str, str, int, int]] = set()
        for violation in _violations(facts, select):
            if violation.origin is not None:  # in another file of the project: no fix there
                violation = replace(violation, fix=None)
            src = violation.origin.source if violation.origin is not None else self.src
            start, end = src.span(violation.node)
            key = (violation.code, violation.origin.filename if violation.origin else "", start, end)
            if key in seen:  # one faulty statement reached from several loops or calls
                continue
            seen.add(key)
            located = _Located(violation, Location(*src.position(start)), Location(*src.position(end)))
            if not noqa.suppressed(src.line(located.start.row), violation.code):
                self.located.append(located)
        self.located.sort(key=lambda item: (item.filename(""), item.start.row, item.start.column, item.violation.code))
        if verify:
            self._verify_fixes(filename, select)

    def counts(self) -> Counter[str]:
        return Counter(item.violation.code for item in self.located)

    def _verify_fixes(self, filename: str, select: Collection[str]) -> None:
        """All the fixes that do not touch each other are tried together, in one re-analysis;
        only when that batch fails is each fix tried alone (so the cost stays one analysis per
        file, not one per finding)."""
        before = self.counts()
        with_fix = [index for index, item in enumerate(self.located) if item.violation.fix is not None]
        if not with_fix:
            return
        batch = compatible_fixes(fix for fix in (item.violation.fix for item in self.located) if fix is not None)
        chosen = {id(fix) for fix in batch}
        if len(batch) > 1 and self._batch_passes(batch, chosen, before, filename, select):
            with_fix = [i for i in with_fix if id(self.located[i].violation.fix) not in chosen]
        for index in with_fix:
            item = self.located[index]
            fix = item.violation.fix
            assert fix is not None
            problem = self._fix_problem(fix, item.violation.code, before, filename, select)
            if problem is not None:
                self.located[index] = _Located(replace(item.violation, fix=None), item.start, item.end)
                self.withheld.append((item.start.row, item.violation.code, problem))

    def _batch_passes(
        self, batch: list[Fix], chosen: set[int], before: Counter[str], filename: str, select: Collection[str]
    ) -> bool:
        """Together the fixes compile, each removes a finding of its code, and none brings another."""
        fixed = apply_edits(self.src.text, [edit for fix in batch for edit in fix.edits])
        try:
            if not compiles(fixed, filename):
                return False
            after = _Analysis(fixed, filename, select, verify=False, imports=self.imports).counts()
        except (SyntaxError, ValueError, SourceError, RecursionError, MemoryError):
            return False
        fixed_codes = Counter(item.violation.code for item in self.located if id(item.violation.fix) in chosen)
        expected = before - fixed_codes
        return all(after[code] <= expected[code] for code in after)

    def _fix_problem(self, fix: Fix, code: str, before: Counter[str], filename: str, select) -> Optional[str]:
        fixed = apply_edits(self.src.text, fix.edits)
        try:
            if not compiles(fixed, filename):
                return "the fixed code does not compile"
            after = _Analysis(fixed, filename, select, verify=False, imports=self.imports).counts()
        except (SyntaxError, ValueError, SourceError, RecursionError, MemoryError):
            return "the fixed code does not compile"
        if after[code] >= before[code]:
            return "its finding would remain"
        introduced = sorted(c for c in after if after[c] > before[c])
        if introduced:
            return f"it would introduce {', '.join(introduced)}"
        return None

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
            filename=item.filename(filename),
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


def _guarded(result: FileResult, work: Callable[[], None]) -> FileResult:
    # Syntax trees are millions of small objects that live until the file is done: the cyclic
    # collector would walk them again and again for nothing (5x slower parses of big files).
    collecting = gc.isenabled()
    gc.disable()
    try:
        work()
    except SourceError as exc:
        result.error = FileError(result.filename, str(exc))
        result.fixed_source = None
    except RecursionError:
        result.error = FileError(result.filename, "expression nested too deeply to analyse")
        result.fixed_source = None
    finally:
        if collecting:
            gc.enable()
    return result


def check_source(
    source: Source,
    filename: str,
    select: Collection[str] = ALL_CODES,
    with_edits: bool = True,
    imports: Optional[Mapping[str, str]] = None,
) -> FileResult:
    """Report the findings in one file's text. Never raises on bad input.

    `with_edits=False` leaves each fix's `edits` empty (its message and safety stay): the text
    output does not show them, and the cache need not keep them. `imports`: names imported
    outside this text (a notebook's other cells), alias -> dotted origin."""
    result = FileResult(filename=filename)

    def work() -> None:
        text, _ = _decode(source)
        analysis = _Analysis(text, filename, select, imports=imports)
        result.findings = analysis.findings(filename, with_edits)
        result.dependencies = analysis.dependencies
        _report_withheld(result, analysis.withheld)

    return _guarded(result, work)


def _report_withheld(result: FileResult, withheld: list[tuple[int, str, str]]) -> None:
    """A fix that failed its own check is a bug in accumlint, but the finding stands: it is
    reported without the fix, and a warning names the rule (the exit status follows the
    findings, so `--exit-zero` holds)."""
    for row, code, problem in withheld:
        result.notices.append(Notice(result.filename, row, f"the {code} fix here was withheld ({problem}); the "
                                     f"finding is reported without it. A fix that fails accumlint's own check is "
                                     f"a bug in accumlint: please report it"))


def fix_source(
    source: Source,
    filename: str,
    select: Collection[str] = ALL_CODES,
    unsafe_fixes: bool = False,
    imports: Optional[Mapping[str, str]] = None,
) -> FileResult:
    """Apply every applicable fix until none is left; report what remains.

    `fixed_source` is None when nothing changed, else the new text in the input's type."""
    result = FileResult(filename=filename)
    allowed = {"safe", "unsafe"} if unsafe_fixes else {"safe"}

    def work() -> None:
        original, encoding = _decode(source)
        text = original
        analysis = first = _Analysis(text, filename, select, imports=imports)
        withheld = list(first.withheld)
        for _ in range(MAX_FIX_ROUNDS):
            fixes = [
                item.violation.fix
                for item in analysis.located
                if item.violation.fix is not None and item.violation.fix.applicability in allowed
            ]
            chosen = compatible_fixes(fixes)
            if not chosen:
                break
            # Each fix passed its check alone; together they must still compile, or they go in
            # one at a time.
            rewritten = apply_edits(text, [edit for fix in chosen for edit in fix.edits])
            try:
                together = compiles(rewritten, filename)
            except (ValueError, RecursionError, MemoryError):
                together = False
            if not together:
                rewritten = apply_edits(text, chosen[0].edits)
            if rewritten == text:
                break
            analysis = _Analysis(rewritten, filename, select, imports=imports)
            withheld.extend(w for w in analysis.withheld if w not in withheld)
            text = rewritten
        result.findings = analysis.findings(filename)
        result.dependencies = analysis.dependencies
        gone = first.counts() - analysis.counts()
        result.fixes_applied = sum(gone.values())  # findings fixed, not edits applied
        _report_withheld(result, withheld)
        if text != original:
            result.fixed_source = encode(text, encoding) if isinstance(source, bytes) else text

    return _guarded(result, work)
