"""The unit a learning-rate schedule's length is written in: micro-batches or optimizer updates.

A schedule stepped every micro-step is only wrong when its length counts optimizer updates
(`len(loader) // k * epochs`); one sized in micro-batches (`epochs * len(loader)`,
`max_steps * k`) is stepped at the rate it was built for. The length is read from the
scheduler's constructor, through the assignments of the names it uses."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, Optional

from accumlint.analysis.collect import Collected, Definition, Scope
from accumlint.analysis.exprs import dotted, int_value, keyword, last_part, positional

MICRO, UPDATES = "micro-steps", "updates"

# Keyword arguments that hold a schedule's total length, and the position of the total for the
# usual constructors (`get_linear_schedule_with_warmup(opt, warmup, total)`).
_LENGTH_KEYWORDS = ("num_training_steps", "total_iters", "T_max", "total_steps", "num_train_steps", "t_total",
                    "max_steps", "steps_per_epoch")
_LENGTH_POSITION = {
    "get_linear_schedule_with_warmup": 2, "get_cosine_schedule_with_warmup": 2,
    "get_polynomial_decay_schedule_with_warmup": 2, "get_cosine_with_hard_restarts_schedule_with_warmup": 2,
    "get_scheduler": 3, "OneCycleLR": 2, "CosineAnnealingLR": 1, "PolynomialLR": 1, "LinearLR": 4,
}
_PASS_THROUGH = {"ceil", "floor", "int", "round", "max", "min", "abs"}


@dataclass(frozen=True)
class Length:
    expr: ast.expr  # the length as the constructor receives it
    unit: Optional[str]  # MICRO, UPDATES or None (the code does not show it)


def _scope_chain(scope: Scope, collected: Collected, name: str) -> Iterator[Scope]:
    current: Optional[Scope] = scope
    while current is not None:
        yield current
        current = current.parent
    if name.startswith("self.") and scope.class_node is not None:  # attributes set in other methods
        for other in collected.scopes:
            if other.class_node is scope.class_node and other is not scope:
                yield other


def _definitions(name: str, scope: Scope, collected: Collected) -> list[Definition]:
    for sc in _scope_chain(scope, collected, name):
        found = sc.definitions(name)
        if found:
            return list(found)
    return []


def _length_argument(call: ast.Call) -> Optional[ast.expr]:
    for name in _LENGTH_KEYWORDS:
        value = keyword(call, name)
        if value is not None:
            return value
    index = _LENGTH_POSITION.get(last_part(dotted(call.func)))
    return positional(call, index) if index is not None else None


def _passes_through(definition: Definition, name: str) -> bool:
    """`..., sched = accelerator.prepare(..., sched)`: the same scheduler, rebound."""
    value = definition.value
    if not (isinstance(value, ast.Call) and last_part(dotted(value.func)) == "prepare"):
        return False
    index = definition.index[0] if definition.kind == "unpack" and definition.index else 0
    return dotted(positional(value, index)) == name


def _constructor(
    name: str, scope: Scope, collected: Collected, depth: int = 0
) -> Optional[tuple[ast.Call, Scope]]:
    """The call that built the scheduler bound to `name`, through `accelerator.prepare(...)`, and
    the scope it sits in (where the names of its length are bound: `total` in `__init__`)."""
    if depth > 3:
        return None
    found = [d for d in _definitions(name, scope, collected) if not _passes_through(d, name)]
    definitions = [d for d in found if d.kind != "param"]
    if not definitions and found and "." not in name:
        return _handed_in(name, found[0].stmt.scope, collected, depth)
    if len(definitions) != 1:
        return None
    definition = definitions[0]
    value = definition.value
    if definition.kind == "unpack" and isinstance(value, ast.Tuple) and len(definition.index) == 1:
        value = value.elts[definition.index[0]] if definition.index[0] < len(value.elts) else None
        if dotted(value) is None:
            return None
    if definition.kind in {"assign", "unpack"} and dotted(value) is not None:  # `self.sched = sched`
        return _constructor(dotted(value) or "", definition.stmt.scope, collected, depth + 1)
    if not isinstance(value, ast.Call):
        return None
    if definition.kind == "unpack" and last_part(dotted(value.func)) == "prepare" and definition.index:
        passed = positional(value, definition.index[0])
        source = dotted(passed)
        return _constructor(source, definition.stmt.scope, collected, depth + 1) if source else None
    if definition.kind == "assign":
        if last_part(dotted(value.func)) == "prepare":
            passed = positional(value, 0)
            source = dotted(passed)
            return _constructor(source, definition.stmt.scope, collected, depth + 1) if source else None
        return value, definition.stmt.scope
    return None


def _handed_in(param: str, function: Scope, collected: Collected, depth: int) -> Optional[tuple[ast.Call, Scope]]:
    """A scheduler that is a parameter (`train_one_epoch(..., lr_scheduler, ...)`): the one its
    callers in this module build and hand in, when they all hand in the same one."""
    if param not in function.params:
        return None
    index = function.params.index(param)
    if function.class_node is not None:
        if function.params[:1] != ["self"] or index == 0:
            return None
        index -= 1  # `self` is not written at the call
        callee = function.class_node.name if function.name == "__init__" else function.name
    elif function.parent is not None and function.parent.parent is None:
        callee = function.name
    else:
        return None
    results: dict[int, tuple[ast.Call, Scope]] = {}
    for caller in collected.scopes:
        for site in caller.calls:
            func = dotted(site.call.func)
            if func is None or last_part(func) != callee:
                continue
            if function.class_node is not None and function.name != "__init__" and func != f"self.{callee}":
                continue
            args = site.call.args
            if any(isinstance(arg, ast.Starred) for arg in args[: index + 1]):
                return None
            passed = args[index] if index < len(args) else keyword(site.call, param)
            source = dotted(passed)
            built = _constructor(source, caller, collected, depth + 1) if source else None
            if built is None:
                return None  # one caller hands in something not in sight: unknown
            results[id(built[0])] = built
    return next(iter(results.values())) if len(results) == 1 else None


class _Units:
    def __init__(self, scope: Scope, collected: Collected, k_names: set[str]):
        self.scope = scope
        self.collected = collected
        self.k_names = k_names
        self.k_last = {last_part(n) for n in k_names if len(last_part(n)) > 3}

    def _is_k(self, name: str) -> bool:
        return name in self.k_names or last_part(name) in self.k_last

    def unit(self, expr: ast.expr, depth: int = 0) -> Optional[tuple[int, bool]]:
        """(power of k, counts batches through len()) of an expression, None when the parts disagree."""
        if depth > 8:
            return 0, False
        name = dotted(expr)
        if name is not None:
            if self._is_k(name):
                return 1, False
            values = [d.value for d in _definitions(name, self.scope, self.collected)
                      if d.kind == "assign" and d.value is not None]
            results = {self.unit(v, depth + 1) for v in values}
            if not results:
                return 0, False
            return results.pop() if len(results) == 1 else None
        if isinstance(expr, ast.Call):
            func = last_part(dotted(expr.func))
            if func == "len":
                return 0, True
            first = positional(expr, 0)
            if func in _PASS_THROUGH and first is not None:
                return self.unit(first, depth + 1)
            return 0, False
        if isinstance(expr, ast.BinOp):
            left, right = self.unit(expr.left, depth + 1), self.unit(expr.right, depth + 1)
            if left is None or right is None:
                return None
            if isinstance(expr.op, ast.Mult):
                return left[0] + right[0], left[1] or right[1]
            if isinstance(expr.op, (ast.Div, ast.FloorDiv)):
                return left[0] - right[0], left[1] or right[1]
            if isinstance(expr.op, (ast.Add, ast.Sub)):
                if left == right or right == (0, False):
                    return left
                if left == (0, False):
                    return right
                return None
            return 0, False
        return 0, False


def _bounds_update_counter(name: str, scope: Scope, in_step_block) -> bool:
    """`if global_step >= max_steps: break` where `global_step += 1` runs in the step block: the
    run is `max_steps` optimizer updates long."""
    counted = {
        target for target, definitions in scope.defs.items()
        for d in definitions if d.kind == "aug" and in_step_block(d.stmt)
    }
    for stmt in scope.stmts:
        node = stmt.node
        test = node.test if isinstance(node, (ast.If, ast.While)) else None
        if test is None:
            continue
        for compare in ast.walk(test):
            if isinstance(compare, ast.Compare) and len(compare.ops) == 1:
                sides = {dotted(compare.left), dotted(compare.comparators[0])}
                if name in sides and sides & counted:
                    return True
    return False


def schedule_length(
    scheduler: str, scope: Scope, collected: Collected, k_names: set[str], in_step_block, micro_loop_iter
) -> Optional[Length]:
    """The length the scheduler bound to `scheduler` was built with, and its unit when the code
    shows it; None when the constructor or its length is not in sight."""
    built = _constructor(scheduler, scope, collected)
    if built is None:
        return None
    call, built_in = built
    length = _length_argument(call)
    if length is None or int_value(length) is not None:
        return Length(length, None) if length is not None else None
    units = _Units(built_in, collected, k_names)
    found = units.unit(length)
    if found is None:
        return Length(length, None)
    power, batches = found
    if power < 0:
        return Length(length, UPDATES)
    if power > 0 or batches:
        return Length(length, MICRO)
    name = dotted(length)
    if name is not None:
        bounds = {dotted(a) for a in (micro_loop_iter.args if isinstance(micro_loop_iter, ast.Call) else [])}
        if isinstance(micro_loop_iter, ast.Call) and last_part(dotted(micro_loop_iter.func)) == "range" and name in bounds:
            return Length(length, MICRO)
        if _bounds_update_counter(name, scope, in_step_block):
            return Length(length, UPDATES)
    return Length(length, None)
