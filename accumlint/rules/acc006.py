"""ACC006 retain-graph-in-loop: `backward(retain_graph=True)` with no later pass through the graph."""

from __future__ import annotations

from typing import Iterator

from accumlint.analysis import ModuleFacts
from accumlint.analysis.ancestry import backward_ancestry
from accumlint.analysis.events import BACKWARD, STEP, retains_graph
from accumlint.analysis.exprs import method_of
from accumlint.model import Fix, Violation
from accumlint.rules.edits import remove_keyword
from accumlint.rules.meta import FixSafety

CODE = "ACC006"
NAME = "retain-graph-in-loop"
SUMMARY = "backward(retain_graph=True) in a loop keeps graphs nobody uses"
FIX: FixSafety = "unsafe"


def _shares_outer_graph(event, inner, sf, facts: ModuleFacts) -> bool:
    """The backward runs through a graph built outside the inner loop (shared features, a list of
    losses), not one built fresh in each inner iteration (a micro-step loop)."""
    for name in backward_ancestry(sf.scope, [event]):
        for definition in sf.scope.definitions(name):
            if inner.contains(definition.stmt) or not definition.stmt.loops:
                continue
            if definition.kind in {"assign", "unpack"} and facts.flow._definition_carries(definition, 0):
                return True
            if definition.kind == "for" and definition.stmt.loops[-1] is inner:
                return True
    return any(d.kind == "for" and inner.contains(d.stmt) and d.stmt.node is inner.node
               for name in backward_ancestry(sf.scope, [event]) for d in sf.scope.definitions(name))


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        for event in sf.events:
            if event.kind != BACKWARD or event.call is None or event.helper or not retains_graph(event):
                continue
            if not event.stmt.loops:
                continue
            outer = event.stmt.loops[0]
            innermost = event.stmt.loops[-1]
            if innermost is not outer and not any(
                e.kind == STEP and innermost.contains(e.stmt) for e in sf.events
            ) and _shares_outer_graph(event, innermost, sf, facts):
                continue  # one backward per task or head of a shared graph: the repeats need it
            others = [
                e for e in sf.events
                if e.kind == BACKWARD and e is not event and outer.contains(e.stmt)
            ]
            if others:
                continue  # a second backward in the iteration may run through this graph
            if any(method_of(site.call)[1] == "grad" and outer.contains(site.stmt) for site in sf.scope.calls):
                continue  # torch.autograd.grad in the same iteration may reuse the graph
            edit = remove_keyword(facts.source, event.call, "retain_graph")
            yield Violation(
                CODE,
                "`retain_graph=True` keeps every iteration's graph alive but no later backward in the "
                "iteration uses it: memory grows until OOM",
                event.call,
                Fix("Remove `retain_graph=True`", "unsafe", (edit,)) if edit is not None else None,
            )
