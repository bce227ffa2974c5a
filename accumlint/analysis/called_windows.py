"""Windows whose micro-steps run inside a called function: the caller's loop calls
`forward_backward(batch)` once per iteration and steps after it, and that function cuts the batch
into k micro-batches (`for micro in batch.chunk(k):` or `for _ in range(k):`) and runs a backward on
each. The step belongs to the caller, the window to the callee; neither function shows both.

Kept apart from `Window` (whose micro-loop and step share one scope): the rules that read these
read the callee's backward passes only."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from accumlint.analysis.calls import Callee, Resolver
from accumlint.analysis.collect import Loop, Scope, Stmt
from accumlint.analysis.events import BACKWARD, STEP, ZERO, Event
from accumlint.analysis.windows import Window, k_aliases, micro_batch_count


@dataclass(frozen=True)
class CalledWindow:
    call: Event  # the caller's call of the function (a backward it performs, seen from the caller)
    step: Event  # the caller's optimizer step after that call, in the same loop
    callee: Callee  # the function that runs the micro-batches
    loop: Loop  # its loop over them
    k: ast.expr  # their count, in the callee's own terms
    k_names: frozenset[str]
    backwards: tuple[Event, ...]  # the callee's backward passes, one per micro-batch

    def path(self) -> str:
        line = getattr(self.call.stmt.node, "lineno", "?")
        return f"its micro-batches run in `{self.callee.scope.name}()`, called from `{self.call.stmt.scope.name}`, line {line}, before the step"


def _micro_loop_in(callee: Callee) -> Optional[tuple[Loop, ast.expr, list[Event]]]:
    """The callee's one outermost loop over k micro-batches with a backward on each, when the
    callee never steps (then it runs a window of its own) and zeroes the gradients, if at all,
    only before that loop (the window's start: `zero_grad(); for micro in batch.chunk(k): ...`)."""
    events = callee.module.direct.get(id(callee.scope), [])
    backwards = [e for e in events if e.kind == BACKWARD]
    outermost = [loop for loop in callee.scope.loops if loop.parent is None]
    if not backwards or len(outermost) != 1 or any(e.kind == STEP for e in events):
        return None
    loop = outermost[0]
    if any(e.kind == ZERO and (e.stmt.loops or e.order > loop.header.order) for e in events):
        return None
    if any(not (e.stmt.loops and e.stmt.loops[-1] is loop and e.stmt.runs_whenever(loop.node)) for e in backwards):
        return None
    k = micro_batch_count(loop, backwards)
    return (loop, k, backwards) if k is not None else None


def _ungated(stmt: Stmt) -> bool:
    """`stmt` runs whenever its innermost loop's body runs (or its function's, outside loops)."""
    return stmt.runs_whenever(stmt.loops[-1].node if stmt.loops else None)


def called_windows(scope: Scope, events: list[Event], windows: list[Window], resolver: Resolver) -> list[CalledWindow]:
    """The calls of `scope` that run k micro-batches' backward passes, each followed by the
    optimizer step in the same loop body (or, outside loops, the same function body): one update
    per call. A loop that has a window of its own, or a backward of its own, is left to that."""
    steps = [e for e in events if e.kind == STEP and _ungated(e.stmt)]
    if not steps:
        return []
    found: list[CalledWindow] = []
    for site in scope.calls:
        stmt = site.stmt
        loop = stmt.loops[-1] if stmt.loops else None
        step = next((s for s in steps if s.order > stmt.order and (s.stmt.loops[-1] if s.stmt.loops else None) is loop), None)
        if step is None or not _ungated(stmt) or not isinstance(site.call.func, (ast.Name, ast.Attribute)):
            continue
        if loop is not None and any(w.step_loop is loop or w.micro_loop is loop for w in windows):
            continue
        own = [e for e in events if e.kind == BACKWARD and e.stmt is not stmt and (loop is None or loop.contains(e.stmt))]
        if own:
            continue
        callee = resolver.resolve(site.call, scope)
        inner = _micro_loop_in(callee) if callee is not None and callee.scope is not scope else None
        if callee is None or inner is None:
            continue
        micro_loop, k, passes = inner
        call = Event(BACKWARD, stmt, site.call, helper=callee.scope.name, callee=callee)
        names = frozenset(k_aliases(k, callee.scope))
        found.append(CalledWindow(call, step, callee, micro_loop, k, names, tuple(passes)))
    return found
