"""Where a value handed to a call is read on the other side: under a parameter's name in the
function called, or, for a project class built with it, under the attribute its `__init__`
stores it in (`self.model = model`), in every method of the class. A model wrapped in `main()`
and handed to `train_one_epoch(model, ...)` or to `Trainer(model, ...)` is then the model those
functions' loops run."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from accumlint.analysis.calls import Callee, Resolver
from accumlint.analysis.collect import CallSite, Scope
from accumlint.analysis.exprs import dotted


@dataclass(frozen=True)
class Handoff:
    callee: Callee  # the function called (the class's `__init__` for a constructor)
    name: str  # the value's name there: a parameter, or `self.attr`
    readers: tuple[Scope, ...]  # the functions that read it under that name


def _parameter(call: ast.Call, callee: Callee, value: str) -> Optional[str]:
    """The parameter of `callee` that `call` binds to the name `value` (None when it is not
    passed, or passed where the binding cannot be read: after a `*args`)."""
    params = list(callee.scope.params)
    if callee.scope.class_node is not None and params[:1] in (["self"], ["cls"]):
        params = params[1:]  # a bound method or a constructor: the instance is not an argument
    for position, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return None
        if dotted(argument) == value:
            return params[position] if position < len(params) else None
    for keyword in call.keywords:
        if keyword.arg is not None and dotted(keyword.value) == value:
            return keyword.arg if keyword.arg in callee.scope.params else None
    return None


def _stored_as(init: Scope, param: str) -> list[str]:
    """`self.model = model` in `__init__`: the attributes that hold the parameter."""
    return sorted(
        name for name, definitions in init.defs.items()
        if name.startswith("self.") and name.count(".") == 1
        and all(d.kind == "assign" and isinstance(d.value, ast.Name) and d.value.id == param for d in definitions)
    )


def handoffs(site: CallSite, value: str, resolver: Resolver) -> list[Handoff]:
    """Where the call at `site` hands over the value named `value`, and what it is called there."""
    scope = site.stmt.scope
    callee = resolver.resolve(site.call, scope)
    if callee is not None:
        name = _parameter(site.call, callee, value)
        return [Handoff(callee, name, (callee.scope,))] if name is not None else []
    init = resolver.constructor(site.call, scope)
    if init is None or init.scope.class_node is None:
        return []
    param = _parameter(site.call, init, value)
    if param is None:
        return []
    methods = tuple(s for s in init.module.collected.scopes if s.class_node is init.scope.class_node and s is not init.scope)
    return [Handoff(init, attribute, methods) for attribute in _stored_as(init.scope, param)]
