"""ACC005 partial-window-dropped: a `% k` gate over a finite loader with no end-of-data clause."""

from __future__ import annotations

from typing import Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts
from accumlint.analysis.events import STEP
from accumlint.analysis.collect import FOR_LOOPS
from accumlint.analysis.exprs import dotted, int_value, keyword, last_part, names_in, positional
from accumlint.analysis.windows import Window, range_len
from accumlint.model import Fix, Violation
from accumlint.rules.edits import OR, operand, replace
from accumlint.rules.meta import FixSafety

CODE = "ACC005"
NAME = "partial-window-dropped"
SUMMARY = "the last micro-batches of each epoch never reach optimizer.step()"
FIX: FixSafety = "sometimes"
_ENDLESS = {"cycle", "repeat", "count", "islice"}
_PROGRESS_BARS = {"tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "track"}


def _sized(expr: ast.expr) -> Optional[ast.expr]:
    """The object whose len() the loop runs over, when the code shows one."""
    if isinstance(expr, ast.Call):
        name = dotted(expr.func) or ""
        if name in _PROGRESS_BARS:
            inner = positional(expr, 0)
            return _sized(inner) if inner is not None else None
        return None
    if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)):
        return expr
    return None


def _epoch_counter(window: Window) -> Optional[tuple[str, int, Optional[ast.expr]]]:
    """(counter, start, sized iterable) when the loop counts the batches of one epoch."""
    node = window.micro_loop.node
    if not isinstance(node, FOR_LOOPS):
        return None
    iterable = node.iter
    over_len = range_len(iterable)
    if over_len is not None and isinstance(node.target, ast.Name):
        return node.target.id, 0, _sized(over_len)
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "enumerate"):
        return None
    source = positional(iterable, 0)
    if source is None:
        return None
    inner = source
    if isinstance(inner, ast.Call) and last_part(dotted(inner.func)) in _ENDLESS:
        return None
    if isinstance(inner, ast.Call) and dotted(inner.func) == "range":
        return None
    start_expr = keyword(iterable, "start") or positional(iterable, 1)
    start = int_value(start_expr) if start_expr is not None else 0
    if start is None:
        return None
    target = node.target
    if not (isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)):
        return None
    return target.elts[0].id, start, _sized(source)


def _flushed_after(window: Window, facts_events) -> bool:
    loop = window.micro_loop
    for event in facts_events:
        if event.kind != STEP or event.order <= loop.last_order or loop.contains(event.stmt):
            continue
        if loop.parent is None or loop.parent.contains(event.stmt):
            return True
    return False


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        for window in sf.windows:
            if window.form == "inner" or window.test is None or window.test.end_clause:
                continue
            counted = _epoch_counter(window)
            if counted is None:
                continue
            counter, start, sized = counted
            if counter not in names_in(window.test.counter) or _flushed_after(window, sf.events):
                continue
            k_text = facts.source.segment(window.k)
            fix = None
            gate = window.gate
            if gate is None:
                continue
            if window.form == "gate" and window.test.flag is None and sized is not None:
                sized_text = facts.source.segment(sized)
                end = f"{counter} + 1 == len({sized_text})" if start == 0 else (
                    f"{counter} == len({sized_text})" if start == 1 else f"{counter} - {start - 1} == len({sized_text})"
                )
                new_test = f"{operand(facts.source, gate.test, OR)} or {end}"
                edit = replace(facts.source, gate.test, new_test)
                fix = Fix(f"Also step when the data ends: `or {end}`", "safe", (edit,))
            yield Violation(
                CODE,
                f"the step is gated on `% {k_text}` with no end-of-data clause: the last "
                f"batches of each epoch (len % {k_text}) never reach optimizer.step()",
                gate,
                fix,
            )
