"""Where a value handed to a call is read on the other side: under a parameter's name in the
function called, or, for a project class built with it, under the attribute its `__init__`
stores it in (`self.model = model`, also by way of `super().__init__(model)`), in every method
of the class and of its project bases. A model wrapped in `main()` and handed to
`train_one_epoch(model, ...)` or to `Trainer(model, ...)` is then the model those functions' loops
run."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from accumlint.analysis.calls import AnalysedModule, Callee, Resolver, bound_arguments
from accumlint.analysis.collect import CallSite, Definition, Scope
from accumlint.analysis.exprs import dotted


@dataclass(frozen=True)
class Handoff:
    callee: Callee  # the function called (the class's `__init__` for a constructor)
    name: str  # the value's name there: a parameter, or `self.attr`
    readers: tuple[Scope, ...]  # the functions that read it under that name
    module: AnalysedModule  # the module those functions are in
    # parameters of the function called that the call fills with instances of project classes,
    # by the name the function's module gives each class (`loss_scaler` -> NativeScaler)
    classes: dict[str, str] = field(default_factory=dict)


def handed_names(argument: ast.expr) -> set[str]:
    """The names an argument may hand over: `model`, or either choice of `ddp_model if
    args.distributed else model`. Not a choice between an object and what it holds (`model.module
    if args.distributed else model`): on each side that is the object the wrapper holds, never the
    wrapper."""
    if isinstance(argument, ast.IfExp):
        body, orelse = handed_names(argument.body), handed_names(argument.orelse)
        if any(a.startswith(b + ".") or b.startswith(a + ".") for a in body for b in orelse):
            return set()
        return body | orelse
    name = dotted(argument)
    return {name} if name is not None else set()


def call_arguments(call: ast.Call) -> list[ast.expr]:
    """Every value a call hands over, positional and by keyword."""
    return [*call.args, *(kw.value for kw in call.keywords)]


def _parameter(bound: dict[str, ast.expr], value: str) -> Optional[str]:
    """The parameter the call binds to the name `value` (or to a choice that may be `value`)."""
    return next((param for param, argument in bound.items() if value in handed_names(argument)), None)


def instance_classes(bound: dict[str, ast.expr], site: CallSite, callee: Callee, resolver: Resolver) -> dict[str, str]:
    """The parameters the call fills with an instance of a project class the caller shows."""
    found: dict[str, str] = {}
    for param, argument in bound.items():
        name = dotted(argument)
        if isinstance(argument, ast.Call):  # `train_one_epoch(model, Scaler())`
            cls = resolver.built_class(argument, site.stmt.scope)
        else:
            cls = resolver.instance_class(name, site.stmt.scope) if name is not None else None
        if cls is not None:
            found[param] = callee.module.resolver.foreign_class(resolver, cls)
    return found


_MAX_BASE_INITS = 3  # `super().__init__` calls followed to the base that stores a parameter


def _stored_as(init: Callee, param: str, depth: int = 0) -> list[str]:
    """`self.model = model` (or `self.model, self.loader = model, loader`) in `__init__`: the
    attributes that hold the parameter. Where the `__init__` stores none of them itself but hands
    the parameter to `super().__init__(...)`, those the base's `__init__` stores it in."""
    def holds(definition: Definition) -> bool:
        value = definition.bound_value() if definition.kind == "unpack" else definition.value
        return definition.kind in {"assign", "unpack"} and isinstance(value, ast.Name) and value.id == param

    stored = sorted(
        name for name, definitions in init.scope.defs.items()
        if name.startswith("self.") and name.count(".") == 1 and all(holds(d) for d in definitions)
    )
    if stored or depth >= _MAX_BASE_INITS:
        return stored
    for site in init.scope.calls:
        func = site.call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "__init__" and isinstance(func.value, ast.Call)
                and dotted(func.value.func) == "super"):
            continue
        base = init.module.resolver.resolve(site.call, init.scope)
        bound = bound_arguments(site.call, base) if base is not None else None
        handed = _parameter(bound, param) if bound is not None else None
        if base is not None and handed is not None:
            # `self.model = model.module` after `super().__init__(model)`: the subclass keeps another object
            return [name for name in _stored_as(base, handed, depth + 1) if name not in init.scope.defs]
    return []


def handoffs(site: CallSite, value: str, resolver: Resolver) -> list[Handoff]:
    """Where the call at `site` hands over the value named `value`, and what it is called there."""
    scope = site.stmt.scope
    callee = resolver.resolve(site.call, scope)
    if callee is not None:
        bound = bound_arguments(site.call, callee)
        name = _parameter(bound, value) if bound is not None else None
        if bound is None or name is None:
            return []
        return [Handoff(callee, name, (callee.scope,), callee.module, instance_classes(bound, site, callee, resolver))]
    init = resolver.constructor(site.call, scope)
    if init is None or init.scope.class_node is None:
        return []
    bound = bound_arguments(site.call, init)
    param = _parameter(bound, value) if bound is not None else None
    attributes = _stored_as(init, param) if param is not None else []
    built = dotted(site.call.func)
    if not attributes or built is None:
        return []
    found: list[Handoff] = []
    overridden: set[str] = {"__init__"}  # a base's method that a subclass redefines never runs on it
    for module, cls in resolver.class_chain(built):
        methods = tuple(s for s in module.collected.scopes if s.class_node is cls and s.name not in overridden)
        overridden |= {s.name for s in module.collected.scopes if s.class_node is cls}
        found.extend(Handoff(init, attribute, methods, module) for attribute in attributes if methods)
    return found


@dataclass(frozen=True)
class Holder:
    value: str  # the name of the value held in the scope that builds the holder (`net`)
    attribute: str  # where the holder's class keeps it (`self.net`)

    def reached_through(self, holder: str) -> str:
        """The value as reached through a name for the holder (`self.actor` -> `self.actor.net`)."""
        return f"{holder}.{self.attribute.partition('.')[2]}"


_RUN_ON_CALL = ("__call__", "forward")  # what calling an instance runs (`forward` of a module)
_MAX_METHOD_HOPS = 2  # own methods followed from `__call__` to the call of the value held


def holders(scope: Scope, values: set[str], resolver: Resolver) -> dict[str, Holder]:
    """`actor = Actor(net=net, ...)`: the names this scope binds, by every assignment of them, to
    an instance of a project class that keeps one of `values` in an attribute and runs it whenever
    the instance is called (its `__call__`, or `forward`, calls `self.net(...)`, also by way of its
    own methods): a loop that calls the holder runs the value."""
    sites = {id(site.call): site for site in scope.calls}
    found: dict[str, Holder] = {}
    for name, definitions in scope.defs.items():
        held: set[Holder] = set()
        for definition in definitions:
            site = sites.get(id(definition.value)) if definition.kind == "assign" else None
            holder = _holder_built(site, values, resolver) if site is not None else None
            if holder is None:
                break
            held.add(holder)
        else:
            if len(held) == 1:
                found[name] = held.pop()
    return found


def _holder_built(site: CallSite, values: set[str], resolver: Resolver) -> Optional[Holder]:
    handed = sorted({n for a in call_arguments(site.call) for n in handed_names(a)} & values)
    for value in handed:
        found = handoffs(site, value, resolver)
        if not found or found[0].callee.scope.name != "__init__":
            continue
        methods = [m for handoff in found for m in handoff.readers]
        run = next((m for wanted in _RUN_ON_CALL for m in methods if m.name == wanted), None)
        attribute = found[0].name
        if run is not None and _runs(run, attribute, methods, 0):
            return Holder(value, attribute)
    return None


def _runs(method: Scope, attribute: str, methods: list[Scope], depth: int) -> bool:
    """The method calls `attribute` (`self.net(x)`, `self.net.forward(x)`) with autograd on, or
    one of the class's own methods that does."""
    called = [dotted(site.call.func) for site in method.calls if not site.stmt.no_grad]
    if attribute in called or f"{attribute}.forward" in called:
        return True
    if depth >= _MAX_METHOD_HOPS:
        return False
    own = {m.name: m for m in reversed(methods)}  # the most derived class's method wins
    return any(
        name is not None and name.startswith("self.") and name.count(".") == 1 and name[5:] in own
        and own[name[5:]] is not method and _runs(own[name[5:]], attribute, methods, depth + 1)
        for name in called
    )
