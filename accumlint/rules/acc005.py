"""ACC005 partial-window-dropped: a `% k` gate over a finite loader with no end-of-data clause."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from accumlint.analysis import ModuleFacts
from accumlint.analysis.events import STEP
from accumlint.analysis.exprs import dotted, int_value, keyword, names_in, positional, strip_parens
from accumlint.analysis.windows import Window, range_len
from accumlint.model import Fix, Violation

CODE = "ACC005"
_ENDLESS = {"cycle", "repeat", "count", "islice"}
_PROGRESS_BARS = {"tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "track"}


def _sized(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The object whose len() the loop runs over, when the code shows one."""
    expr = strip_parens(expr)
    if isinstance(expr, cst.Call):
        name = dotted(expr.func) or ""
        if name in _PROGRESS_BARS:
            inner = positional(expr, 0)
            return _sized(inner) if inner is not None else None
        return None
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)):
        return expr
    return None


def _epoch_counter(window: Window) -> Optional[tuple[str, int, Optional[cst.BaseExpression]]]:
    """(counter, start, sized iterable) when the loop counts the batches of one epoch."""
    node = window.micro_loop.node
    if not isinstance(node, cst.For):
        return None
    iterable = strip_parens(node.iter)
    over_len = range_len(iterable)
    if over_len is not None and isinstance(node.target, cst.Name):
        return node.target.value, 0, _sized(over_len)
    if not (isinstance(iterable, cst.Call) and dotted(iterable.func) == "enumerate"):
        return None
    source = positional(iterable, 0)
    if source is None:
        return None
    inner = strip_parens(source)
    if isinstance(inner, cst.Call) and (dotted(inner.func) or "").rsplit(".", 1)[-1] in _ENDLESS:
        return None
    if isinstance(inner, cst.Call) and dotted(inner.func) == "range":
        return None
    start_expr = keyword(iterable, "start") or positional(iterable, 1)
    start = int_value(start_expr) if start_expr is not None else 0
    if start is None:
        return None
    target = node.target
    if not (isinstance(target, cst.Tuple) and target.elements and isinstance(target.elements[0].value, cst.Name)):
        return None
    return target.elements[0].value.value, start, _sized(source)


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
            k_text = facts.module.code_for_node(strip_parens(window.k))
            fix = None
            gate = window.gate
            if window.form == "gate" and window.test.flag is None and sized is not None:
                sized_text = facts.module.code_for_node(sized)
                end = f"{counter} + 1 == len({sized_text})" if start == 0 else (
                    f"{counter} == len({sized_text})" if start == 1 else f"{counter} - {start - 1} == len({sized_text})"
                )
                test = gate.test
                if isinstance(strip_parens(test), (cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar:
                    test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                new_test = cst.BooleanOperation(
                    left=test,
                    operator=cst.Or(),
                    right=cst.parse_expression(end),
                )
                fix = Fix(f"Also step when the data ends: `or {end}`", "safe", {gate.test: new_test})
            yield Violation(
                CODE,
                f"the step is gated on `% {k_text}` with no end-of-data clause: the last "
                f"batches of each epoch (len % {k_text}) never reach optimizer.step()",
                gate,
                fix,
            )
