"""ACC002 loss-kept-with-graph: a running total or list outside the loop keeps each step's graph."""

from __future__ import annotations

from typing import Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts
from accumlint.analysis.ancestry import backward_ancestry
from accumlint.analysis.collect import Loop, Scope, Stmt
from accumlint.analysis.events import BACKWARD
from accumlint.analysis.exprs import dotted, method_of, names_in
from accumlint.model import Fix, Violation
from accumlint.rules.edits import detached, replace
from accumlint.rules.meta import FixSafety

CODE = "ACC002"
NAME = "loss-kept-with-graph"
SUMMARY = "a running total or list keeps every step's autograd graph alive"
FIX: FixSafety = "safe"
_COLLECTING = {"append", "add_", "extend", "insert"}


def _accumulations(scope: Scope, loop: Loop) -> Iterator[tuple[str, ast.expr, Stmt]]:
    """(accumulator, added value, statement) for `A += E`, `A = A + E`, `A.append(E)` in the loop."""
    for name, definitions in scope.defs.items():
        for definition in definitions:
            if not loop.contains(definition.stmt) or definition.value is None:
                continue
            if definition.kind == "aug" and definition.op in {"AddAssign", "SubtractAssign"}:
                yield name, definition.value, definition.stmt
            elif definition.kind == "assign":
                value = definition.value
                if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
                    if dotted(value.left) == name:
                        yield name, value.right, definition.stmt
                    elif dotted(value.right) == name:
                        yield name, value.left, definition.stmt
    for site in scope.calls:
        if not loop.contains(site.stmt) or not isinstance(site.stmt.node, ast.Expr):
            continue
        receiver, method = method_of(site.call)
        while isinstance(receiver, ast.Subscript):  # `losses["g"].append(loss)`: the dict keeps it
            receiver = receiver.value
        holder = dotted(receiver) if receiver is not None else None
        if holder and method in _COLLECTING and site.stmt.node.value is site.call:
            value_index = 1 if method == "insert" else 0
            args = [a for a in site.call.args if not isinstance(a, ast.Starred)]
            if len(args) > value_index:
                yield holder, args[value_index], site.stmt


def _defined_outside(name: str, scope: Scope, loop: Loop) -> bool:
    inside = [o for o in scope.occurrences if o.name == name and loop.contains(o.stmt)]
    return bool(inside) and not min(inside, key=lambda o: o.seq).write


def _returned_to_backward(scope: Scope, name: str, facts: ModuleFacts) -> bool:
    """Returned (or yielded) accumulators may be backward-ed by a caller: unknown unless we see the callers."""
    if not any(name in names_in(value) for value, _ in scope.returns):
        return False
    callers = [
        (sf, site) for sf in facts.scopes for site in sf.scope.calls
        if (dotted(site.call.func) or "").rsplit(".", 1)[-1] == scope.name
    ]
    if not callers:
        return True
    for sf, site in callers:
        targets = {d.name for ds in sf.scope.defs.values() for d in ds if d.stmt is site.stmt}
        if targets & backward_ancestry(sf.scope, sf.events) or not targets:
            return True
    return False


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        scope = sf.scope
        backward_names: Optional[set[str]] = None
        for loop in scope.loops:
            in_loop = [e for e in sf.events if e.kind == BACKWARD and not e.helper and loop.contains(e.stmt)]
            if not in_loop:
                continue
            if backward_names is None:
                backward_names = backward_ancestry(scope, sf.events)
            loop_graph = backward_ancestry(scope, sf.events, only=lambda e: loop.contains(e.stmt))
            for name, value, stmt in _accumulations(scope, loop):
                if stmt.loop is not loop:
                    continue  # reported for the innermost loop that holds it
                if name in backward_names or not _defined_outside(name, scope, loop):
                    continue
                if not (names_in(value) & loop_graph) or not facts.flow.carries_graph(value, stmt):
                    continue
                if _returned_to_backward(scope, name, facts):
                    continue
                value_text = facts.source.segment(value)
                new_value = detached(facts.source, value)
                yield Violation(
                    CODE,
                    f"`{name}` keeps the autograd graph of `{value_text}` from every iteration alive: "
                    f"add `{new_value}` (or `.item()`)",
                    stmt.node,
                    Fix(f"Detach `{value_text}` before keeping it", "safe", (replace(facts.source, value, new_value),)),
                )
