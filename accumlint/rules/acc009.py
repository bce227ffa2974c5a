"""ACC009 ddp-sync-every-micro-step: DistributedDataParallel all-reduces on every micro-step."""

from __future__ import annotations

from typing import Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts
from accumlint.analysis.collect import WITHS, Scope
from accumlint.analysis.events import BACKWARD
from accumlint.analysis.exprs import dotted, method_of
from accumlint import frameworks
from accumlint.frameworks import ddp
from accumlint.model import Violation
from accumlint.rules.meta import FixSafety

CODE = "ACC009"
NAME = "ddp-sync-every-micro-step"
SUMMARY = "DistributedDataParallel all-reduces on every micro-step"
FIX: FixSafety = None
# Any sync control in the file means the author manages gradient sync (a context kept in a
# variable, a helper that returns it, FSDP, Fabric, Accelerate): we cannot follow them all, so
# stay silent.
_SYNC_CONTROLS = frameworks.SYNC_CONTROLS


def _manages_sync(facts: ModuleFacts) -> bool:
    for scope in facts.collected.scopes:
        if any(name.rsplit(".", 1)[-1] in _SYNC_CONTROLS for name in scope.defs):
            return True
        if any(o.name.rsplit(".", 1)[-1] in _SYNC_CONTROLS for o in scope.occurrences):
            return True
        if any(method_of(site.call)[1] in _SYNC_CONTROLS for site in scope.calls):
            return True
    return False


def _backward_only_no_sync(facts: ModuleFacts, sf) -> Iterator[Violation]:
    """`with model.no_sync(): loss.backward()` with the forward outside: DDP read the flag in forward."""
    for header in sf.scope.stmts:
        node = header.node
        if not isinstance(node, WITHS) or not header.is_statement:
            continue
        for item in node.items:
            if not isinstance(item.context_expr, ast.Call):
                continue
            receiver, method = method_of(item.context_expr)
            model = dotted(receiver) if receiver is not None else None
            if method != ddp.NO_SYNC_CONTEXT or model is None:
                continue
            inside = [s for s in sf.scope.stmts if s.within(node)]
            backward = [e for e in sf.events if e.kind == BACKWARD and e.stmt in inside]
            forward = [
                o for o in sf.scope.occurrences
                if o.stmt in inside and (o.name == model or o.name.startswith(model + "."))
            ]
            if backward and not forward:
                yield Violation(
                    CODE,
                    f"`{model}.no_sync()` wraps only the backward pass: DDP decides to sync during the "
                    f"forward, so every micro-step still all-reduces; put the forward inside it too",
                    node,
                )


def _foreign_wrapper(facts: ModuleFacts, models: set[str]) -> Optional[str]:
    """The package of the DDP class the models were built with, when none of them is torch's
    (apex's DistributedDataParallel has no `no_sync()`)."""
    origins: set[str] = set()
    for scope in facts.collected.scopes:
        for name in models:
            for definition in scope.definitions(name):
                if isinstance(definition.value, ast.Call):
                    func = dotted(definition.value.func) or ""
                    head, _, rest = func.partition(".")
                    origin = facts.collected.imports.get(head)
                    if origin is not None and (not rest or rest.rsplit(".", 1)[-1] in ddp.WRAPPERS):
                        origins.add(origin.split(".", 1)[0])
    if origins and "torch" not in origins:
        return sorted(origins)[0]
    return None


def _wrapped_in_sight(name: str, scope: Scope, facts: ModuleFacts) -> bool:
    """The DDP wrapping of `name` is the object this scope uses: made in this function or one
    around it, or on `self` in a method of the same class (not the same name in another function,
    where the parameter may be the bare model)."""
    if name.startswith("self."):
        owner: Optional[Scope] = scope
        while owner is not None and owner.class_node is None:
            owner = owner.parent
        scopes = [s for s in facts.collected.scopes if owner is not None and s.class_node is owner.class_node]
    else:
        scopes = []
        current: Optional[Scope] = scope
        while current is not None:
            scopes.append(current)
            current = current.parent
    for candidate in scopes:
        for definition in candidate.definitions(name):
            value = definition.value
            if isinstance(value, ast.Call):
                built = facts.roles.canonical(dotted(value.func)).rsplit(".", 1)[-1]
                if built in ddp.WRAPPERS:
                    return True
    return False


def check(facts: ModuleFacts) -> Iterator[Violation]:
    ddp = facts.roles.ddp_models
    if not ddp:
        return
    handled = _manages_sync(facts)
    foreign = _foreign_wrapper(facts, ddp)
    for sf in facts.scopes:
        yield from _backward_only_no_sync(facts, sf)
        if handled:
            continue
        for window in sf.windows:
            used = [o.name for o in sf.scope.occurrences if o.name in ddp and window.micro_loop.contains(o.stmt)]
            used += [  # `self.model(x)`: the wrapped model called, not read as a name
                dotted(site.call.func) or "" for site in sf.scope.calls
                if dotted(site.call.func) in ddp and window.micro_loop.contains(site.stmt)
            ]
            used = [name for name in used if _wrapped_in_sight(name, sf.scope, facts)]
            uses_model = bool(used)
            model = used[0] if used else "model"
            backward = next((e for w, e in sf.micro_step_backwards() if w is window), None)
            if uses_model and backward is not None and backward.call is not None:
                if foreign is not None:
                    advice = (
                        f"{foreign}'s DistributedDataParallel has no `no_sync()`: switch its all-reduce off on "
                        f"non-final micro-steps by hand (apex: `{model}.disable_allreduce()`, and "
                        f"`{model}.enable_allreduce()` before the last backward of the window)"
                    )
                else:
                    advice = f"wrap the forward and backward of non-final micro-steps in `{model}.no_sync()`"
                yield Violation(
                    CODE,
                    "the DistributedDataParallel/FSDP model reduces gradients across ranks on every "
                    f"micro-step: {advice}",
                    backward.call,
                )
