"""Events that happen inside called functions, followed down from the loop that calls them:
the backward inside `self._forward_backward(batch)`, the zeroing inside a helper of another
module. Each comes with the chain of calls that leads to it, for the finding's message."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, Optional

from accumlint.analysis.calls import AnalysedModule
from accumlint.analysis.events import STEP, Event, EventKind

_MAX_DEPTH = 6


@dataclass(frozen=True)
class Reached:
    event: Event  # an event a called function performs itself
    module: AnalysedModule  # the module that function is in
    calls: tuple[Event, ...]  # the calls from the loop's scope down to that function

    def path(self, when: str = "every micro-step") -> str:
        """`called every micro-step from `train_epoch`, line 12` (and the calls in between)."""
        first = self.calls[0]
        text = f"called {when} from `{first.stmt.scope.name}`, line {getattr(first.stmt.node, 'lineno', '?')}"
        inner = [f"`{call.helper}()`" for call in self.calls[1:]]
        return text + (f", through {', '.join(inner)}" if inner else "")

    def on_every_call(self) -> bool:
        """The event runs whenever the first call runs: neither it nor a call in between sits
        under an `if` or inside a loop of its function (a helper that steps its scheduler only
        `if self.step % k == 0` decides for itself)."""
        stmts = [self.event.stmt, *(call.stmt for call in self.calls[1:])]
        conditional = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.match_case)
        return not any(isinstance(node, conditional) for stmt in stmts for node, _ in stmt.path)


def reached(call: Event, kind: EventKind, depth: int = 0, above: tuple[Event, ...] = ()) -> Iterator[Reached]:
    """The `kind` events performed inside the function `call` runs, and further down."""
    callee = call.callee
    if callee is None or depth > _MAX_DEPTH:
        return
    chain = (*above, call)
    module = callee.module
    for event in module.direct[id(callee.scope)]:
        if event.kind == kind:
            yield Reached(event, module, chain)
    for site in callee.scope.calls:
        inner = module.resolver.resolve(site.call, callee.scope)
        if inner is None or inner.scope is callee.scope or kind not in module.resolver.kinds(inner):
            continue
        step = Event(kind, site.stmt, site.call, None, helper=inner.scope.name, callee=inner)
        yield from reached(step, kind, depth + 1, chain)


def scaler_stepped_in(step: Event) -> Optional[str]:
    """The GradScaler a called step function steps (`self.optimizer_step()` running
    `self.scaler.step(self.optim)`), when every step it reaches goes through one."""
    if step.callee is None:
        return None
    scalers = {found.event.scaler for found in reached(step, STEP)}
    return scalers.pop() if len(scalers) == 1 and None not in scalers else None
