"""ACC011 accumulation-on-loss-scale-wrapper: gradient accumulation attached to a loss-scaling
optimizer wrapper (Keras `LossScaleOptimizer`) instead of the optimizer it wraps: its
`apply_gradients` patched here or by a helper it is handed to, or the wrapper wrapped in an
accumulation class."""

from __future__ import annotations

from typing import Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts
from accumlint.analysis.accumulators import find as find_accumulators
from accumlint.analysis.collect import Definition, Scope, Stmt
from accumlint.analysis.exprs import dotted, last_part
from accumlint import frameworks
from accumlint.model import Violation
from accumlint.rules.meta import FixSafety

CODE = "ACC011"
NAME = "accumulation-on-loss-scale-wrapper"
SUMMARY = "gradient accumulation is attached to a LossScaleOptimizer wrapper instead of its inner optimizer"
FIX: FixSafety = None

_WHAT_TO_DO = (
    "in Keras 3 build the inner optimizer with `gradient_accumulation_steps=k` and then wrap it; in "
    "tf.keras accumulate the unscaled gradients in `train_step` and apply them every k steps"
)


def _wrapper_definition(definition: Definition) -> bool:
    return definition.kind == "assign" and _wrapper_call(definition.value)


def _unconditional(definition: Definition, at: Stmt) -> bool:
    """The definition runs whenever `at` does (its enclosing compound statements are `at`'s)."""
    own = {id(node): branch for node, branch in at.path}
    return all(own.get(id(node)) == branch for node, branch in definition.stmt.path)


def _wrapper_call(value: Optional[ast.expr]) -> bool:
    return isinstance(value, ast.Call) and last_part(dotted(value.func)) in frameworks.LOSS_SCALE_WRAPPERS


def _may_be_wrapper(name: str, at: Stmt) -> Optional[Definition]:
    """The wrapper construction that may reach `name` at `at` (on some path through the code)."""
    scope = at.scope
    if name.startswith("self."):
        for other in scope.class_scopes or [scope]:
            for definition in other.definitions(name):
                if _wrapper_definition(definition):
                    return definition
        return None
    earlier = [d for d in scope.definitions(name) if d.order < at.order and d.stmt.compatible(at)]
    for definition in reversed(earlier):
        if _wrapper_definition(definition):
            return definition
        if _unconditional(definition, at):
            return None
    return None


def _patched_params(scope: Scope) -> set[str]:
    """Parameters of a function whose `apply_gradients` it replaces (`optimizer.apply_gradients = ...`)."""
    patched = set()
    for name, definitions in scope.defs.items():
        owner, _, attr = name.rpartition(".")
        if attr in frameworks.STEP_METHODS and owner in scope.params and any(d.kind == "assign" for d in definitions):
            patched.add(owner)
    return patched


def _argument_for(call: ast.Call, scope: Scope, param: str, method: bool) -> Optional[ast.expr]:
    params = list(scope.params)
    if method and params and params[0] in {"self", "cls"}:
        params = params[1:]
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    if param in params:
        index = params.index(param)
        positional = [a for a in call.args]
        if index < len(positional) and not any(isinstance(a, ast.Starred) for a in positional[: index + 1]):
            return positional[index]
    return None


def _accumulating_classes(facts: ModuleFacts) -> set[str]:
    return facts.cached(
        "acc011.accumulating_classes",
        lambda: {
            s.class_node.name for a in find_accumulators(facts.collected) for s in a.scopes if s.class_node is not None
        },
    )


def _where(definition: Optional[Definition]) -> str:
    if definition is None:
        return "built in this call"
    return f"built on line {getattr(definition.stmt.node, 'lineno', '?')}"


def _wrapper_argument(argument: Optional[ast.expr], at: Stmt) -> Optional[tuple[str, Optional[Definition]]]:
    """An argument that is (or may be) a loss-scale wrapper: a name bound to one, or the construction itself."""
    if argument is None:
        return None
    if _wrapper_call(argument):
        return "LossScaleOptimizer(...)", None
    name = dotted(argument)
    wrapper = _may_be_wrapper(name, at) if name else None
    return (name, wrapper) if name and wrapper is not None else None


def _patches(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        scope = sf.scope
        for name, definitions in scope.defs.items():
            owner, _, attr = name.rpartition(".")
            if attr not in frameworks.STEP_METHODS or not owner:
                continue
            for definition in definitions:
                if definition.kind != "assign":
                    continue
                wrapper = _may_be_wrapper(owner, definition.stmt)
                if wrapper is None:
                    continue
                yield Violation(
                    CODE,
                    f"`{owner}.{attr}` is patched for gradient accumulation, but `{owner}` is a LossScaleOptimizer "
                    f"wrapper ({_where(wrapper)}), not the optimizer that applies the update: under tf.keras "
                    f"the gradients are silently not accumulated; {_WHAT_TO_DO}",
                    definition.stmt.node,
                )


def _hand_offs(facts: ModuleFacts) -> Iterator[Violation]:
    resolver = facts.analysed.resolver
    for sf in facts.scopes:
        for site in sf.scope.calls:
            call = site.call
            arguments = [_wrapper_argument(a, site.stmt) for a in (*call.args, *(kw.value for kw in call.keywords))]
            candidates = [c for c in arguments if c is not None]
            if not candidates:
                continue
            callee = resolver.resolve(call, sf.scope)
            reported = False
            if callee is not None:
                method = isinstance(call.func, ast.Attribute) and callee.scope.class_node is not None
                for param in _patched_params(callee.scope):
                    found = _wrapper_argument(_argument_for(call, callee.scope, param, method), site.stmt)
                    if found is not None:
                        name, wrapper = found
                        reported = True
                        yield Violation(
                            CODE,
                            f"the LossScaleOptimizer wrapper `{name}` ({_where(wrapper)}) is handed to "
                            f"`{callee.scope.name}()`, which patches its `{param}.apply_gradients` for gradient "
                            f"accumulation: under tf.keras the gradients are silently not accumulated; {_WHAT_TO_DO}",
                            call,
                        )
                        break
            if reported:
                continue
            constructed = last_part(dotted(call.func))
            if constructed[:1].isupper() and (
                "accum" in constructed.lower() or constructed in _accumulating_classes(facts)
            ):
                name, wrapper = candidates[0]
                yield Violation(
                    CODE,
                    f"the LossScaleOptimizer wrapper `{name}` ({_where(wrapper)}) is wrapped in the accumulation "
                    f"class `{constructed}`: accumulation belongs to the inner optimizer, before loss scaling; "
                    f"{_WHAT_TO_DO}",
                    call,
                )


def check(facts: ModuleFacts) -> Iterator[Violation]:
    if not any(wrapper in facts.source.text for wrapper in frameworks.LOSS_SCALE_WRAPPERS):
        return  # a wrapper is only known by the class name written at its construction
    yield from _patches(facts)
    yield from _hand_offs(facts)
