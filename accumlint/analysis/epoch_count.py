"""A count of one epoch's batches kept by hand: `n_iter += 1` on every micro-step, `n_iter = 0`
with each epoch (in the epoch loop, or in a method of the trainer it calls there, like
`end_epoch()`), and the step gated on `n_iter % k == 0`. Like `enumerate(loader)`, the count
restarts with each pass over the data, so the batches after the last full window are left over.

A trainer may spread this over methods: the loop in `train()` calls `step()`, which calls
`optimize()`, which raises the count through `iter()` and holds the gate. The count is read
across the methods of the class the loop reaches on every iteration."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Callable, Optional

from accumlint.analysis.calls import Resolver
from accumlint.analysis.collect import FOR_LOOPS, Loop, Scope, Stmt, enclosing_class
from accumlint.analysis.exprs import dotted, int_value, plus_constant
from accumlint.analysis.windows import Window

_MAX_DEPTH = 3


@dataclass(frozen=True)
class HandCount:
    name: str  # the counter as the gate reads it (`self.n_iter`)
    start: int  # 1 when a micro-step raises the count before the gate tests it, else 0
    loop: Loop  # the loop over one epoch's data


def _always(stmt: Stmt) -> bool:
    """Runs on every call of its function: under no `if`, loop or `try`."""
    return stmt.runs_whenever()


def _methods_run(
    scope: Scope, runs: Callable[[Stmt], bool], resolver: Resolver, depth: int = 0
) -> list[tuple[Scope, Stmt]]:
    """Methods of `scope`'s class that its statements passing `runs` call, and those they call
    on every call of theirs, each with the statement of `scope` that leads there."""
    own = enclosing_class(scope)
    if own is None or own.class_node is None or depth > _MAX_DEPTH:
        return []
    found: list[tuple[Scope, Stmt]] = []
    for site in scope.calls:
        if not runs(site.stmt):
            continue
        callee = resolver.resolve(site.call, scope)
        if callee is None or callee.scope is scope or _class_of(callee.scope) is not own.class_node:
            continue
        found.append((callee.scope, site.stmt))
        found.extend((deeper, site.stmt) for deeper, _ in _methods_run(callee.scope, _always, resolver, depth + 1))
    return found


def _class_of(scope: Scope) -> Optional[ast.ClassDef]:
    owner = enclosing_class(scope)
    return owner.class_node if owner is not None else None


def _directly_in(loop: Loop, stmt: Stmt) -> bool:
    """In the loop's own body, under nothing that may skip it."""
    return stmt.loop is loop and stmt.runs_whenever(loop.node)


def _data_loop(window: Window, resolver: Resolver) -> Optional[tuple[Loop, Callable[[Stmt], bool], Optional[Stmt]]]:
    """The loop over the data, a test of the statements of its scope that run every micro-step,
    and, for a step method the loop calls, the statement of the loop that calls it."""
    loop = window.micro_loop
    if not loop.entry:
        if not isinstance(loop.node, FOR_LOOPS) or loop.implicit:
            return None
        return loop, (lambda s: window.every_micro_step(s) and _directly_in(loop, s)), None
    # A step method of a trainer: the loop of another method that calls it on every iteration.
    entry = loop.scope
    found: list[tuple[Loop, Stmt]] = []
    for method in entry.class_scopes:
        for candidate in method.loops:
            if candidate.entry or candidate.implicit or not isinstance(candidate.node, FOR_LOOPS):
                continue
            for reached, via in _methods_run(method, functools.partial(_directly_in, candidate), resolver):
                if reached is entry:
                    found.append((candidate, via))
    if len(found) != 1:
        return None  # called from several loops, or from none in sight
    data, via = found[0]
    return data, (lambda s: _directly_in(data, s)), via


def hand_epoch_count(window: Window, resolver: Resolver) -> Optional[HandCount]:
    """The window's gate reads a count of the epoch's batches kept by hand (see the module)."""
    test = window.test
    if test is None or test.hand_counted or test.since_last is not None or test.flag is not None:
        return None
    if window.form != "gate" or window.gate_header is None:
        return None
    base, _ = plus_constant(test.counter)
    name = dotted(base)
    found = _data_loop(window, resolver) if name is not None else None
    if name is None or found is None:
        return None
    data, every_step, via = found
    if name in data.targets or (via is not None and not name.startswith("self.")):
        return None
    gate = window.gate_header
    scopes = data.scope.binding_scopes(name) if name.startswith("self.") else [data.scope]
    # Which methods run where: on every micro-step (and whether before the gate), once per epoch.
    per_step: dict[int, bool] = {}
    if via is not None:  # what the step method always calls, before or after its gate
        for method, stmt in _methods_run(gate.scope, _always, resolver):
            per_step.setdefault(id(method), stmt.order < gate.order)
    order = via.order if via is not None else gate.order
    for method, stmt in _methods_run(data.scope, every_step, resolver):
        per_step.setdefault(id(method), stmt.order < order)
    epochs = data.parent
    per_epoch = {  # methods the epoch loop calls on every pass, outside the loop over the data
        id(method) for method, _ in _methods_run(data.scope, functools.partial(_directly_in, epochs), resolver)
    } if epochs is not None else set()
    raised: list[bool] = []  # for each increment: runs before the gate
    started = restarted = False
    for scope in scopes:
        for definition in scope.definitions(name):
            stmt, value = definition.stmt, definition.value
            if definition.kind == "aug" and definition.op == "AddAssign" and int_value(value) == 1:
                if scope is gate.scope and (every_step(stmt) if scope is data.scope else _always(stmt)):
                    raised.append(stmt.order < gate.order)
                elif scope is data.scope and every_step(stmt):
                    raised.append(stmt.order < order)  # the loop raises it around its call of the step method
                elif id(scope) in per_step and _always(stmt):
                    raised.append(per_step[id(scope)])
                else:
                    return None
            elif definition.kind == "assign" and int_value(value) == 0:
                if scope is data.scope:
                    if data.contains(stmt):
                        return None  # reset inside the loop: a window count, not an epoch's
                    if epochs is not None and _directly_in(epochs, stmt):
                        restarted = True
                    started = started or stmt.order < data.header.order
                elif scope.name == "__init__" and _class_of(scope) is not None:
                    started = True
                elif id(scope) in per_epoch:
                    restarted = True
                else:
                    return None  # set to 0 where the loop's course is not in sight
            else:
                return None
    if len(raised) != 1 or not (restarted if epochs is not None else started and via is None):
        return None
    return HandCount(name, 1 if raised[0] else 0, data)
