"""Which names feed a backward pass: the values whose autograd graph that backward runs through."""

from __future__ import annotations

from accumlint.analysis.collect import Scope
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.events import BACKWARD, Event
from accumlint.analysis.exprs import names_in


def backward_ancestry(scope: Scope, events: list[Event], only=None) -> set[str]:
    """Names read on the way to the tensors of the backward events (optionally those `only` keeps)."""
    found: set[str] = set()
    pending: list[tuple[str, int]] = []
    for event in events:
        if event.kind != BACKWARD or event.tensor is None or (only is not None and not only(event)):
            continue
        pending.extend((name, event.order) for name in names_in(event.tensor))
    seen: set[tuple[str, int]] = set()
    while pending:
        name, before = pending.pop()
        if (name, before) in seen or len(seen) > 2000:
            continue
        seen.add((name, before))
        found.add(name)
        base, updates = reaching(name, scope, before)
        for definition in ([base] if base is not None else []) + updates:
            if definition.value is not None and definition.kind in {"assign", "unpack", "aug", "inplace"}:
                pending.extend((n, definition.order) for n in names_in(definition.value))
    return found
