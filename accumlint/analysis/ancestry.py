"""Which names feed a backward pass: the values whose autograd graph that backward runs through."""

from __future__ import annotations

import ast

from accumlint.analysis.collect import Definition, Scope, Stmt
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.events import BACKWARD, Event
from accumlint.analysis.exprs import class_like, data_names_in, dotted, last_part


_MEMO: dict[tuple[int, bool], tuple[Event, frozenset[str]]] = {}


def backward_ancestry(scope: Scope, events: list[Event], only=None, into_outputs: bool = False) -> set[str]:
    """Names read on the way to the tensors of the backward events (optionally those `only` keeps),
    and with `into_outputs` also through the output a field is read from (`loss = outputs.loss`
    reaches `outputs = model(x, memory=memory)` and so `memory`)."""
    found: set[str] = set()
    for event in events:
        if event.kind != BACKWARD or event.tensor is None or (only is not None and not only(event)):
            continue
        key = (id(event), into_outputs)
        memo = _MEMO.get(key)
        if memo is None or memo[0] is not event:
            memo = (event, frozenset(ancestry_definitions(scope, event, into_outputs=into_outputs)))
            _MEMO[key] = memo
        found |= memo[1]
    return found


def forget_ancestry() -> None:
    _MEMO.clear()


def ancestry_definitions(scope: Scope, event: Event, into_outputs: bool = False) -> dict[str, list[Definition]]:
    """The names read on the way to the backward's tensor, each with the definitions of it that
    the way reaches (none for a parameter or an attribute set in another method). With
    `into_outputs`, a field of a local output (`outs.logits`) is traced to that output's own
    definitions, to tell one forward's outputs from another's."""
    found: dict[str, list[Definition]] = {}
    if event.tensor is None:
        return found
    pending: list[tuple[str, int]] = [(name, event.order) for name in data_names_in(event.tensor)]
    seen: set[tuple[str, int]] = set()
    while pending:
        name, before = pending.pop()
        if (name, before) in seen or len(seen) > 2000:
            continue
        seen.add((name, before))
        base, updates = reaching(name, scope, before)
        root = name.split(".")[0]
        if into_outputs and base is None and not updates and root not in {name, "self"} and _an_output(root, scope):
            pending.append((root, before))
            continue
        reached = found.setdefault(name, [])
        for definition in ([base] if base is not None else []) + updates:
            if all(definition is not known for known in reached):
                reached.append(definition)
            if definition.value is not None and definition.kind in {"assign", "unpack", "aug", "inplace"}:
                pending.extend((n, definition.order) for n in data_names_in(definition.value))
            elif definition.kind == "with" and isinstance(definition.value, ast.Call) and definition.value.args:
                # `with amp.scale_loss(loss, optimizer) as scaled_loss:` runs backward through `loss`
                pending.extend((n, definition.order) for n in data_names_in(definition.value.args[0]))
    return found


def every_branch_ancestry(scope: Scope, event: Event) -> dict[int, Definition]:
    """The definitions of the names on the way to the backward's tensor that may reach it on some
    branch: before it, on a branch it can run with, and not overwritten by a later definition that
    always runs before it (one in a block around the backward). `ancestry_definitions` follows the
    one definition `reaching` gives; this reads both sides of an `if` that assigns a name twice."""
    found: dict[int, Definition] = {}
    pending = [(name, event.stmt) for name in data_names_in(event.tensor)] if event.tensor is not None else []
    seen: set[tuple[str, int]] = set()
    while pending and len(seen) < 500:
        name, at = pending.pop()
        if (name, id(at)) in seen:
            continue
        seen.add((name, id(at)))
        before = [d for d in scope.definitions(name) if d.order < at.order and d.stmt.compatible(at)]
        for definition in before:
            if definition.value is None or any(
                later.order > definition.order and _always_before(later.stmt, at) for later in before
            ):
                continue
            found[id(definition)] = definition
            if definition.kind in {"assign", "unpack", "aug", "inplace"}:
                pending.extend((n, definition.stmt) for n in data_names_in(definition.value))
    return found


def _always_before(stmt: Stmt, at: Stmt) -> bool:
    """`stmt` sits in a block around `at` (or in its own): whenever `at` runs, `stmt` ran first."""
    return len(stmt.path) <= len(at.path) and all(a is b and x == y for (a, x), (b, y) in zip(stmt.path, at.path))


def _an_output(name: str, scope: Scope) -> bool:
    """`outs` of `outs.logits` is made by calls (a model's forward, a loss helper), not drawn from
    the data (`batch = next(batch_iterator)`, `for batch in loader:`) nor an object built from
    values (`state = TrainState(step=0, ...)`, read for `state.scale`): only then is its field
    traced back to it."""
    definitions = scope.definitions(name)
    return bool(definitions) and all(
        d.kind in {"assign", "unpack"} and isinstance(d.value, ast.Call)
        and dotted(d.value.func) not in _DRAWING and not class_like(last_part(dotted(d.value.func)))
        for d in definitions
    )


_DRAWING = {"next", "iter"}
