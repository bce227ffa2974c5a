"""A loop whose every pass runs backward, with the optimizer step once after it: the loop is one
window of passes (chunks of a truncated sequence, micro-batches cut by size, a `while` loop of
restarts), whatever its count.
Zeroing the gradients on every pass keeps only the last pass's gradient for that step (OpenNMT's
truncated BPTT under `accum_count == 1`). Read only where no gated window covers the loop."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from accumlint.analysis.collect import FOR_LOOPS, Loop, Scope
from accumlint.analysis.events import BACKWARD, STEP, ZERO, Event
from accumlint.analysis.exprs import names_in
from accumlint.analysis.windows import Window


@dataclass(frozen=True)
class ZeroedEachPass:
    zero: Event  # the zeroing that runs on every pass, before that pass's backward
    loop: Loop  # the loop of passes
    step: Event  # the step that runs once after the loop


def _assigned_in(loop: Loop, scope: Scope) -> set[str]:
    return {d.name for ds in scope.defs.values() for d in ds if loop.contains(d.stmt)} | set(loop.targets)


def _on_every_pass(event: Event, loop: Loop, changing: set[str]) -> bool:
    """The event runs on each pass of its own loop (this one or one inside it), under no `if` on
    something the passes change (`if j == 0:` zeroes once; `if self.accum_count == 1:` is a setting)."""
    own = event.stmt.loop
    if own is None or not loop.contains(event.stmt) or own.over_optimizers:
        return False
    inside = False
    for node, _ in event.stmt.path:
        if node is loop.node:
            inside = True
        elif inside and isinstance(node, ast.If) and names_in(node.test) & changing:
            return False
    return True


def _reads_gradients(loop: Loop) -> bool:
    """`.grad` read in the loop, or `autograd.grad`: each pass's gradient is used on its own."""
    for node in ast.walk(loop.node):
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "grad":
            return True
    return False


def _step_after(loop: Loop, events: list[Event]) -> Optional[Event]:
    """The first step after the loop in the same pass of the loops around it."""
    around = [l for l in loop.header.loops if not l.over_optimizers]
    for event in events:
        if event.kind != STEP or loop.contains(event.stmt) or event.order <= loop.last_order:
            continue
        if [l for l in event.stmt.loops if not l.over_optimizers] == around and event.stmt.compatible(loop.header):
            return event
    return None


def pass_loops(scope: Scope, events: list[Event], windows: list[Window]) -> list[tuple[Loop, Event]]:
    """The loops of this scope whose passes run backward and never step, with the step that runs
    once after them (the first, where several do): each is one window of passes."""
    found: list[tuple[Loop, Event]] = []
    covered = {id(w.micro_loop) for w in windows} | {id(w.step_loop) for w in windows}
    if not any(e.kind == BACKWARD for e in events):
        return found
    for loop in scope.loops:
        if loop.implicit or id(loop) in covered:
            continue
        if not isinstance(loop.node, FOR_LOOPS) and not (isinstance(loop.node, ast.While) and _repeats_passes(loop.node)):
            continue
        inside = [e for e in events if loop.contains(e.stmt)]
        if not any(e.kind == BACKWARD for e in inside) or any(e.kind == STEP for e in inside):
            continue
        if loop.over_optimizers or _reads_gradients(loop):  # walks the loop's body: asked last
            continue
        step = _step_after(loop, events)
        if step is not None and not _zeroed_before(step, loop, events):
            found.append((loop, step))
    return found


def _repeats_passes(loop: ast.While) -> bool:
    """`while r < args.restart_prob:` runs whole passes until its test fails; a loop that runs
    until a pass gets through keeps only that pass, by design: `while True:` with a `break`, a
    `try` that retries after running out of memory, or a test on what a pass found out (`while not
    ok:` with `ok = torch.isfinite(loss)` set after the backward)."""
    if isinstance(loop.test, ast.Constant) or loop.orelse or names_in(loop.test) & _set_after_backward(loop):
        return False
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Break, ast.Try)):
            return False
        if not isinstance(node, (*FOR_LOOPS, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return True


def _set_after_backward(loop: ast.While) -> set[str]:
    """The names the loop's body assigns in or after its first statement that calls `backward`."""
    found: set[str] = set()
    seen_backward = False
    for statement in loop.body:
        seen_backward = seen_backward or any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"
            for node in ast.walk(statement)
        )
        if seen_backward:
            for node in ast.walk(statement):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                        found |= names_in(target)
    return found


def _zeroed_before(step: Event, loop: Loop, events: list[Event]) -> bool:
    """The step's own optimizer is zeroed between the loop and the step, in the step's block, and a
    fresh backward follows (GEM: each pass's gradient is stored, then `opt.zero_grad()` and a
    backward on the current batch feed `opt.step()`): what the passes left never reaches that step,
    so the loop is no window of it. Another optimizer's zeroing clears nothing of this one's."""
    stepped = {step.optimizer, step.receiver} - {None}
    for zero in events:
        if zero.kind != ZERO or not loop.last_order < zero.order < step.order or loop.contains(zero.stmt):
            continue
        if zero.receiver not in stepped or zero.helper or zero.stmt.path != step.stmt.path:
            continue
        if any(e.kind == BACKWARD and zero.order < e.order < step.order and e.stmt.path == step.stmt.path for e in events):
            return True
    return False


def zeroed_each_pass(scope: Scope, events: list[Event], loops: list[tuple[Loop, Event]]) -> list[ZeroedEachPass]:
    """The zeroings that run on every pass of one of these loops of passes, before a backward."""
    found: list[ZeroedEachPass] = []
    for loop, step in loops:
        inside = [e for e in events if loop.contains(e.stmt)]
        backwards = [e for e in inside if e.kind == BACKWARD]
        changing = _assigned_in(loop, scope)
        for zero in inside:
            if zero.kind != ZERO or not _on_every_pass(zero, loop, changing):
                continue
            own = zero.stmt.loop
            if own is not None and any(b.order > zero.order and own.contains(b.stmt) for b in backwards):
                found.append(ZeroedEachPass(zero, loop, step))
                break
    return found


def backward_each_pass(scope: Scope, events: list[Event], loop: Loop) -> Optional[Event]:
    """The first backward that runs on every pass of the loop: directly in it, under no `if` on
    something the passes change."""
    changing = _assigned_in(loop, scope)
    for event in events:
        if event.kind == BACKWARD and event.call is not None and _on_every_pass(event, loop, changing) and event.stmt.loop is loop:
            return event
    return None
