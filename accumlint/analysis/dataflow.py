"""Def-use facts inside a function: how a loss was scaled on its way to backward, and whether a
value still carries an autograd graph. Both answer "unknown" rather than guess."""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

from accumlint.analysis.collect import AUG_NAMES, CallSite, Collected, Definition, Scope, Stmt, enclosing_class
from accumlint.analysis.exprs import BUILTIN_NAMES, class_like, dotted, is_number, is_true, keyword, last_part, mentions, method_of, names_in
from accumlint.analysis.libraries import numeric_origin
from accumlint.frameworks import keras, torch_core

if TYPE_CHECKING:
    from accumlint.analysis.calls import Callee, Resolver

_PASS_THROUGH_METHODS = {
    "mean", "sum", "float", "half", "double", "bfloat16", "to", "cuda", "cpu", "squeeze", "unsqueeze",
    "view", "reshape", "contiguous", "clone", "type", "type_as", "requires_grad_", "flatten",
}
# `torch.mean(x)`, `keras.ops.mean(x)`: the module's function is the tensor's method.
_MODULE_REDUCTIONS = {"mean", "sum", "squeeze", "unsqueeze", "reshape", "flatten", "clone"}
_DIVIDING_METHODS = {"div", "div_", "divide", "true_divide", "true_divide_", "mul", "mul_", "multiply"}
_DIVIDING_OPERATORS = (ast.Div, ast.FloorDiv, ast.Mult)
_DIVIDING_AUG = {"DivideAssign", "FloorDivideAssign", "MultiplyAssign"}
_DIVIDING_NAMES = {"div", "div_", "divide", "true_divide", "true_divide_"}
# The number of processes a distributed mean divides by (`rt /= world_size`,
# `loss / dist.get_world_size()`): a mean over ranks, never the accumulation window.
_PROCESS_COUNTS = {"world_size", "get_world_size", "num_processes", "n_gpu", "n_gpus", "num_gpus", "ngpus", "nprocs",
                   "num_replicas", "num_replicas_in_sync"}
_SUMMING_AUG = {"AddAssign", "SubtractAssign"}

_NO_GRAPH_METHODS = {
    "detach", "detach_", "item", "tolist", "numpy", "argmax", "argmin", "long", "int", "bool", "byte",
    "size", "dim", "numel", "keys", "nonzero", "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf",
    "isfinite", "any", "all", "new_zeros", "new_ones", "new_empty", "new_full", "zero_", "zeros_like",
    "parse_args", "parse_known_args", "parse_args_into_dataclasses",  # command-line options
    "decode", "batch_decode",  # token ids to text
}
_NO_GRAPH_FUNCTIONS = {
    "zeros", "ones", "empty", "full", "randn", "rand", "randint", "randn_like", "rand_like", "arange",
    "tensor", "zeros_like", "ones_like", "full_like", "empty_like", "eye", "linspace", "from_numpy",
    "as_tensor", "argmax", "argmin", "float", "int", "len", "bool", "str", "round", "range",
    "enumerate", "zip", "next", "iter", "print", "isinstance", "getattr", "list", "dict", "tuple",
    "no_grad", "randperm", "multinomial", "bernoulli",
}
# Fresh tensors a loop may fill by index, and the calls that move or cast one.
_BUFFER_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"})
_MOVES = frozenset({"cuda", "to", "cpu", "float", "double", "half", "bfloat16"})
_ITERATING_BUILTINS = frozenset({"next", "iter", "enumerate", "zip", "range"})
# Builtins that hold what they are given, and no more: `dict(loss=loss.item())` is no output
_CONTAINER_BUILTINS = frozenset({"dict", "list", "tuple", "set"})
_NO_GRAPH_NAME_HINTS = ("init", "zero", "reset", "detach", "repackage", "get_batch", "load", "pretrained")
_NO_GRAPH_ATTRIBUTES = {"data", "grad", "shape", "device", "dtype", "requires_grad", "is_cuda"}
# What `X.from_pretrained(...)` loads that is no module: its calls give token ids or features, no graph.
_NOT_MODULE_CLASSES = ("Tokenizer", "TokenizerFast", "Processor", "FeatureExtractor", "ImageProcessor", "Config")
_INDEX_RETURNING = {"topk", "max", "min", "sort", "kthvalue", "mode", "median"}
_NUMERIC_BUILTINS = frozenset({"max", "min", "abs", "round", "pow"})
# Classes that build a framework's objects (an accelerator, a scaler, an optimizer, a loader): neither
# they nor their attributes (`accelerator.num_processes`) hold a graph, whatever they are given.
_FRAMEWORK_OBJECT_MODULES = (
    "accelerate.", "lightning.", "lightning_fabric.", "pytorch_lightning.", "torch.optim.",
    "torch.utils.data.", "torch.cuda.amp.", "torch.amp.", "deepspeed.",
)
# Methods that hand objects back wrapped for a framework (`accelerator.prepare`, `deepspeed.initialize`,
# `fabric.setup`): models and optimizers, not outputs.
_PREPARING_METHODS = frozenset({"prepare", "prepare_model", "initialize", "setup", "setup_module", "setup_optimizers"})
_NUMBER_CASTS = frozenset({"float", "int", "bool", "len", "str"})
# Builtins whose result the analysis computes from their arguments (`min(1.0, warm_up + step)`).
_READ_FROM_ARGUMENTS = _NUMERIC_BUILTINS | _NUMBER_CASTS
_WRAPPERS = {"Variable", "deepcopy", "copy"}  # what they return carries the graph of what they are given


# How many steps a loss is followed back (a name to its definition, an operand, a helper's return):
# a hand-written token loss computed in a helper over a dozen statements is still read.
_SCALING_DEPTH = 24


@dataclass(frozen=True)
class Scaling:
    divided: bool  # divided or multiplied on the way (any factor counts: precision first)
    k_divisions: int  # how many of those divisions name k
    unknown: bool = False  # the path could not be followed
    neutral: bool = False  # a constant such as the `0.` an accumulator starts from
    # A sum over the samples (`reduction='sum'`, `.sum()` of a fresh loss): the window's gradient
    # is then the sum over all its samples, as one big batch's would be; no division is owed.
    summed: bool = False
    # Divided only by a running count of loop iterations (`loss / (i + 1)`, `loss / n_seen` with
    # `n_seen += 1` every iteration): the divisor and the loop it counts. That is no division by k.
    counter: Optional[ast.expr] = None
    counter_loop: Optional[ast.AST] = None
    # Another path to backward (a branch that produces the loss) is scaled while this one is not:
    # a division written at the backward call would scale that path twice.
    partial: bool = False
    # Divided only by numbers written in the code (`lbox *= 0.05`, `aux / 2`): their product, else None.
    # Terms of one sum weighted differently are a weighted loss, not a loss divided by a window.
    factor: Optional[float] = None

    @property
    def scaled(self) -> bool:
        """Divided on the way, or a sum that needs no division: nothing for ACC001 to report."""
        return self.divided or self.summed


UNKNOWN = Scaling(False, 0, unknown=True)
SOURCE = Scaling(False, 0)
NEUTRAL = Scaling(False, 0, neutral=True)
SUMMED = Scaling(False, 0, summed=True)


def _combine_sum(a: Scaling, b: Scaling) -> Scaling:
    if a.neutral:
        return b
    if b.neutral:
        return a
    if a == b and not a.unknown:  # `ce_sum + kl_sum`, two counter-divided terms of one loop
        return a
    weight_a, weight_b = _literal_weight(a), _literal_weight(b)
    if weight_a is not None and weight_b is not None and weight_a != weight_b:
        # `0.05 * lbox + lobj + 0.5 * lcls`: terms weighted against each other, no window division
        return Scaling(False, 0, partial=a.partial or b.partial)
    unknown = a.unknown or b.unknown or a.divided != b.divided or a.summed or b.summed
    unknown = unknown or a.counter is not None or b.counter is not None
    return Scaling(a.divided and b.divided, min(a.k_divisions, b.k_divisions), unknown, partial=a.partial or b.partial)


def _divide(a: Scaling, names_k: bool, by: Optional[float] = None) -> Scaling:
    """`a` divided (or multiplied); `by` is the factor when it is a number written in the code."""
    if by == 1:
        return a  # `lobj *= 1.0`: no scaling at all
    weight = _literal_weight(a)
    factor = weight * by if by is not None and weight is not None and not names_k else None
    return Scaling(True, a.k_divisions + (1 if names_k else 0), a.unknown, False, factor=factor)


def _literal_weight(a: Scaling) -> Optional[float]:
    """The weight a fresh loss term carries when only numbers in the code scaled it (1 when none
    did); None when it was divided by anything else, summed, counted or cannot be followed."""
    if a.unknown or a.neutral or a.summed or a.counter is not None or a.k_divisions:
        return None
    return a.factor if a.divided else 1.0


_CONSTANTS = {f"{module}.{name}": value for module in ("math", "np", "numpy", "torch")
              for name, value in (("pi", math.pi), ("e", math.e), ("tau", math.tau))}
_ARITHMETIC: dict[type, Callable[[float, float], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Pow: operator.pow,
}


def _number(expr: ast.expr) -> Optional[float]:
    """`0.05`, `-2`, `4 / math.pi ** 2`: the value of a number written in the code."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        inner = _number(expr.operand)
        return None if inner is None else (-inner if isinstance(expr.op, ast.USub) else inner)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, *_ARITHMETIC)):
        left, right = _number(expr.left), _number(expr.right)
        if left is None or right is None:
            return None
        try:
            if isinstance(expr.op, ast.Div):
                return left / right
            result = _ARITHMETIC[type(expr.op)](left, right)
        except (ZeroDivisionError, OverflowError):
            return None
        return result if isinstance(result, float) else None
    if isinstance(expr, ast.Attribute):
        return _CONSTANTS.get(dotted(expr) or "")
    return float(expr.value) if is_number(expr) else None  # type: ignore[attr-defined]


def _convex_terms(expr: ast.BinOp, k_names: set[str]) -> Optional[tuple[ast.expr, ast.expr]]:
    """`w * a + (1 - w) * b` (factors in either order): the two loss terms, when one name
    weighs them against each other and does not name the accumulation steps."""
    if not isinstance(expr.op, ast.Add):
        return None
    sides = []
    for term in (expr.left, expr.right):
        if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult)):
            return None
        sides.append(((term.left, term.right), (term.right, term.left)))
    for weight, loss in sides[0]:
        name = dotted(weight)
        if name is None or mentions(weight, k_names):
            continue
        for other_weight, other_loss in sides[1]:
            complement = other_weight
            if (
                isinstance(complement, ast.BinOp) and isinstance(complement.op, ast.Sub)
                and _number(complement.left) == 1.0 and dotted(complement.right) == name
            ):
                return loss, other_loss
    return None


def _factor(number: Optional[float], divides: bool) -> Optional[float]:
    """What dividing (or multiplying) the loss by `number` multiplies it by (`/ 4` -> 0.25)."""
    if number is None or number == 0:
        return None
    return 1 / number if divides else number


def choices(value: ast.expr) -> list[ast.expr]:
    """The values a conditional expression can take (`a if c else b if d else e`)."""
    if isinstance(value, ast.IfExp):
        return [*choices(value.body), *choices(value.orelse)]
    return [value]


def _alternatives(results: list[Scaling]) -> Scaling:
    """The loss on its way to backward when it comes from one of several branches: unscaled when
    one branch is shown unscaled (every path must be scaled), scaled when all are alike, else unknown."""
    results = [r for r in results if not r.neutral]
    if not results:
        return NEUTRAL
    bare = [r for r in results if not r.unknown and not r.scaled and r.counter is None]
    if bare:
        partial = any(r.partial or (r.scaled and not r.unknown) or r.counter is not None for r in results)
        return Scaling(False, 0, partial=partial or bare[0].partial)
    first = results[0]
    if all(r == first for r in results[1:]):
        return first
    if all(r.divided and not r.unknown for r in results):
        return Scaling(True, min(r.k_divisions for r in results))
    return UNKNOWN


def _summed(inner: Scaling) -> Scaling:
    """`x.sum()` over a whole fresh loss: a sum over its samples."""
    if inner.unknown or inner.neutral or inner.divided or inner.counter is not None:
        return inner
    return Scaling(False, 0, summed=True, partial=inner.partial)


def _number_default(scope: Scope, name: str) -> bool:
    """The function's parameter `name` defaults to a number written in the code."""
    node = scope.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return any(arg.arg == name and _number(default) is not None for arg, default in pairs)


def _scales_loss_for_a_context(call: ast.Call) -> bool:
    return method_of(call)[1] == "scale_loss" and bool(call.args) and not isinstance(call.args[0], ast.Starred)


_LABEL_COUNT = re.compile(r"(num|n)_?(labels|classes|answers|categories)")


def _label_count(expr: ast.expr) -> bool:
    """`cfg.num_labels`, `n_classes`: how many outputs a per-label loss averaged over, an integer
    of at least one; multiplying by it never divides by a window."""
    name = dotted(expr)
    return name is not None and _LABEL_COUNT.fullmatch(last_part(name).lower()) is not None


def _reciprocal_of_k(expr: ast.expr, k_names: set[str]) -> bool:
    return (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, ast.Div)
        and not mentions(expr.left, k_names)
        and mentions(expr.right, k_names)
    )


def reaching(
    name: str, scope: Scope, before: int, at: Optional[Stmt] = None
) -> tuple[Optional[Definition], list[Definition]]:
    """The last plain definition of `name` before `before`, and the in-place updates after it;
    with `at`, leaving out definitions on another branch of an `if` than `at` (they never reach it)."""
    definitions = [
        d for d in scope.definitions(name) if d.order < before and (at is None or d.stmt.compatible(at))
    ]
    base = None
    updates: list[Definition] = []
    for definition in definitions:
        if definition.kind in {"aug", "inplace"}:
            updates.append(definition)
        else:
            base, updates = definition, []
    return base, updates


def _branch_paths(name: str, at: Stmt, k_names: set[str], base: Definition) -> list[tuple[Optional[Definition], list[Definition]]]:
    """The definitions of `name` that reach `at` along each way through the `if`s around the last
    one (`if aux: loss = f(x) / k` / `else: loss = g(x)`): a base and its updates per way.
    Only fresh definitions split (`loss = loss / k` under a setting rescales what came before)."""
    ways: list[tuple[Optional[Definition], tuple[tuple[ast.AST, str], ...]]] = []
    pending: list[tuple[Optional[Definition], tuple[tuple[ast.AST, str], ...]]] = [(base, ())]
    while pending:
        current, chosen = pending.pop()
        split = _splitting_if(name, at, k_names, current, chosen)
        if split is None or current is None:
            ways.append((current, chosen))
            continue
        node, branch = split
        for choice in (branch, "orelse" if branch == "body" else "body"):
            block = getattr(node, choice)
            if block and isinstance(block[-1], (ast.Continue, ast.Break, ast.Return, ast.Raise)):
                continue  # that branch leaves before `at`
            way = chosen + ((node, choice),)
            pending.append((_last_plain(name, at, way), way))
        if len(ways) + len(pending) > 8:
            return []
    definitions = [d for d in at.scope.definitions(name) if d.order < at.order and d.stmt.compatible(at)]
    return [
        (way_base, [
            d for d in definitions
            if d.kind in {"aug", "inplace"} and (way_base is None or d.order > way_base.order) and _on_way(d.stmt, chosen)
        ])
        for way_base, chosen in ways
    ]


def _splitting_if(
    name: str, at: Stmt, k_names: set[str], base: Optional[Definition], chosen: tuple[tuple[ast.AST, str], ...]
) -> Optional[tuple[ast.AST, str]]:
    """The outermost `if` around a fresh definition that `at` is not inside (and no way chose yet).
    A rescale of the earlier value (`loss = loss * w`) by a factor other than k splits only under a
    test that names neither k nor the factor (`if batch["short"]: loss = loss * w`): a division by
    k under a setting (`if accumulate: loss = loss / k`), or a rescale under a test of its own
    factor, is the scale whenever it matters."""
    if base is None or base.value is None:
        return None
    rescale = name in names_in(base.value)
    factor_names = (names_in(base.value) - {name}) | k_names
    for node, branch in base.stmt.path:
        if not isinstance(node, ast.If) or at.within(node) or any(node is n for n, _ in chosen):
            continue
        if rescale and (not _multiplies(base.value, name) or names_in(node.test) & factor_names or mentions(base.value, k_names)):
            return None
        return node, branch
    return None


def _multiplies(value: ast.expr, name: str) -> bool:
    """`loss * w`, `w * loss`, `loss / w`: the old value times a factor, and nothing else."""
    return (
        isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Div))
        and any(isinstance(side, ast.Name) and side.id == name for side in (value.left, value.right))
    )


def _chosen_by_divisor(tests: list[ast.expr], values: list[ast.expr], k_names: set[str]) -> bool:
    """An `if` that separates the ways tests k or a divisor of one of them (`if k > 1:` divide, else
    not; `if steps > 1: return loss / steps`): the branch is chosen by whether a division is owed."""
    divisors = set(k_names)
    for value in values:
        for node in ast.walk(value):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
                divisors |= names_in(node.right)
            elif isinstance(node, ast.Call) and method_of(node)[1] in _DIVIDING_METHODS:
                for arg in node.args:
                    divisors |= names_in(arg)
    divisors -= {"self", "cls"}  # `self.use_aux` and `self.k` share only the object
    return any(names_in(test) & divisors for test in tests)


def _separating_tests(stmts: list[Stmt], at: Optional[Stmt]) -> list[ast.expr]:
    """The tests of the `if`s around these statements (that `at`, when given, is not inside)."""
    return [
        node.test for stmt in stmts for node, _ in stmt.path
        if isinstance(node, ast.If) and (at is None or not at.within(node))
    ]


def _on_way(stmt: Stmt, chosen: tuple[tuple[ast.AST, str], ...]) -> bool:
    """The statement runs on the way that takes these branches (outside those `if`s, or in the branch)."""
    return all(not stmt.within(node) or stmt.within(node, branch) for node, branch in chosen)


def _last_plain(name: str, at: Stmt, chosen: tuple[tuple[ast.AST, str], ...]) -> Optional[Definition]:
    found = None
    for definition in at.scope.definitions(name):
        if definition.order < at.order and definition.stmt.compatible(at) and _on_way(definition.stmt, chosen):
            if definition.kind not in {"aug", "inplace"}:
                found = definition
    return found


class DataFlow:
    def __init__(self, collected: Collected, resolver: Resolver) -> None:
        self.collected = collected
        self.resolver = resolver
        self._module_scope = collected.scopes[0]
        # TensorFlow/Keras without torch: eager tensors hold no autograd graph (the tape does).
        roots = {origin.split(".", 1)[0] for origin in collected.imports.values()}
        self.graph_free = bool(roots & keras.IMPORT_ROOTS) and "torch" not in roots

    # --- scaling -----------------------------------------------------------------------
    def scaling(self, expr: ast.expr, at: Stmt, k_names: set[str], depth: int = 0) -> Scaling:
        if depth > _SCALING_DEPTH:
            return UNKNOWN
        if is_number(expr) or _number(expr) is not None:
            return NEUTRAL
        name = dotted(expr)
        if name is not None:
            return self._name_scaling(name, expr, at, k_names, depth)
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, _DIVIDING_OPERATORS):
                left = self.scaling(expr.left, at, k_names, depth + 1)
                if isinstance(expr.op, ast.Div) and _process_count(expr.right, k_names):
                    return left  # `loss / world_size`: a mean over ranks, no window division
                own = isinstance(expr.op, ast.Div) and _own_size(expr.left, expr.right, k_names)
                if own or (
                    isinstance(expr.op, (ast.Div, ast.Mult)) and _number(expr.left) is None
                    and _number(expr.right) is None and _ratio(expr.left, expr.right, at, k_names)
                ):
                    # `out.sum() / out.shape[0]`: a mean over the micro-batch; `inter / union`, `w * h`:
                    # a ratio or product of the micro-batch's own quantities. None divides by a window.
                    return Scaling(left.divided, left.k_divisions, left.unknown, left.neutral, partial=left.partial, factor=left.factor)
                if isinstance(expr.op, ast.Div):
                    counted = self._counted_by(left, expr.right, at, k_names)
                    if counted is not None:
                        return counted
                if isinstance(expr.op, ast.Mult) and _label_count(expr.right) and not mentions(expr.right, k_names):
                    return left  # `loss * cfg.num_labels`: a per-label mean made a per-sample sum, no 1/k
                if isinstance(expr.op, ast.Mult) and _label_count(expr.left) and not mentions(expr.left, k_names):
                    return self.scaling(expr.right, at, k_names, depth + 1)
                if isinstance(expr.op, ast.Mult):
                    by = _factor(_number(expr.right), divides=False)
                    if left.neutral:
                        by = _factor(_number(expr.left), divides=False)
                        left = self.scaling(expr.right, at, k_names, depth + 1)
                    # `loss * k` undoes a division; only `loss * (1 / k)` divides by k.
                    named = _reciprocal_of_k(expr.left, k_names) or _reciprocal_of_k(expr.right, k_names)
                else:
                    by = _factor(_number(expr.right), divides=True)
                    named = mentions(expr.right, k_names)
                return _divide(left, named, by)
            convex = _convex_terms(expr, k_names)
            if convex is not None:
                # `w * a + (1 - w) * b`: the terms are weighted against each other, no window division
                left, right = (self.scaling(term, at, k_names, depth + 1) for term in convex)
                if all(_literal_weight(term) == 1.0 for term in (left, right)):
                    return Scaling(False, 0, partial=left.partial or right.partial)
            if isinstance(expr.op, (ast.Add, ast.Sub)):
                return _combine_sum(
                    self.scaling(expr.left, at, k_names, depth + 1),
                    self.scaling(expr.right, at, k_names, depth + 1),
                )
            return UNKNOWN
        if isinstance(expr, ast.Call):
            return self._call_scaling(expr, at, k_names, depth)
        if isinstance(expr, (ast.Subscript, ast.Attribute)):
            written = self._slot_written(expr, at, k_names, depth) if isinstance(expr, ast.Subscript) else None
            if written is not None:
                return written
            slot = self._slot_scaling(expr, at, k_names, depth)
            return slot if slot is not None else self.scaling(expr.value, at, k_names, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self.scaling(expr.operand, at, k_names, depth + 1)
        if isinstance(expr, ast.NamedExpr):  # `(extra := crit(out, y))`
            return self.scaling(expr.value, at, k_names, depth + 1)
        if isinstance(expr, ast.IfExp):  # every branch must be scaled
            body, orelse = self.scaling(expr.body, at, k_names, depth + 1), self.scaling(expr.orelse, at, k_names, depth + 1)
            if mentions(expr.test, k_names):  # `loss / k if k > 1 else loss`: a choice made by k itself
                return body if body == orelse else UNKNOWN
            return _alternatives([body, orelse])
        return UNKNOWN

    def _slot_written(self, expr: ast.Subscript, at: Stmt, k_names: set[str], depth: int) -> Optional[Scaling]:
        """`out["loss"] /= k` (or `out["loss"] = out["loss"] / k`, `out["loss"].div_(k)`) before
        `at`, on a path that reaches it: the slot as its last write leaves it; None when nothing
        writes the slot after the dict is bound."""
        holder, key = dotted(expr.value), expr.slice
        if holder is None or not isinstance(key, ast.Constant):
            return None
        base, _ = reaching(holder, at.scope, at.order, at)
        start = base.order if base is not None else -1
        writes = [
            stmt for stmt in at.scope.stmts
            if start < stmt.order < at.order and stmt.is_statement and stmt.compatible(at) and _writes_slot(stmt.node, holder, key.value)
        ]
        if not writes:
            return None
        last = writes[-1]
        node = last.node
        if isinstance(node, ast.Assign):
            return self.scaling(node.value, last, k_names, depth + 1)
        slot = f"{holder}[{key.value!r}]"
        if isinstance(node, ast.AugAssign):
            update = Definition(slot, "aug", node.value, last, op=AUG_NAMES.get(type(node.op)))
        else:  # `out["loss"].div_(k)` (what `_writes_slot` accepts besides assignments)
            assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            call = node.value
            update = Definition(slot, "inplace", call.args[0] if call.args else None, last, op=method_of(call)[1])
        updated = self._updated(self.scaling(expr, last, k_names, depth + 1), update, k_names, depth)
        return updated if updated is not None else UNKNOWN  # a write the scaling does not read

    def _slot_scaling(self, expr: ast.Subscript | ast.Attribute, at: Stmt, k_names: set[str], depth: int) -> Optional[Scaling]:
        """`out["loss"]` (or `out.loss`) where `out = model(batch)` and the project code that runs
        returns a dict display (or an output object built with `loss=...`): how that slot's value is
        scaled there; None when some return is built otherwise."""
        slot = _slot_name(expr)
        holder = dotted(expr.value)
        if slot is None or holder is None:
            return None
        base, updates = reaching(holder, at.scope, at.order, at)
        if base is None or updates or base.kind != "assign" or not isinstance(base.value, ast.Call):
            return None
        helper = self._helper_returns(base.value, base.stmt)
        if helper is None:
            return None
        returns, flow = helper
        values = [(_slot_value(value, slot), stmt) for value, stmt in returns]
        if not values or any(value is None for value, _ in values):
            return None
        return self._returns_scaling(([(value, stmt) for value, stmt in values if value is not None], flow), k_names, depth)

    def _counted_by(self, left: Scaling, divisor: ast.expr, at: Stmt, k_names: set[str]) -> Optional[Scaling]:
        """`loss / (i + 1)`, `loss / n_seen`: a fresh loss divided by a running count of a loop
        around `at` (its index, or a name increased by a constant every iteration)."""
        if left.unknown or left.scaled or left.neutral or left.counter is not None or mentions(divisor, k_names):
            return None
        loop = _running_count(divisor, at)
        if loop is None:
            return None
        return Scaling(False, 0, counter=divisor, counter_loop=loop, partial=left.partial)

    def _name_scaling(self, name, expr, at: Stmt, k_names, depth) -> Scaling:
        base, updates = reaching(name, at.scope, at.order, at)
        if base is None and not updates and at.scope is not self._module_scope and name not in at.scope.params:
            base, updates = reaching(name, self._module_scope, 1 << 30)
        if base is None and not updates:
            if isinstance(expr, ast.Attribute):
                return self.scaling(expr.value, at, k_names, depth + 1)
            return UNKNOWN
        paths = _branch_paths(name, at, k_names, base) if base is not None and base.stmt.scope is at.scope else []
        if paths:  # the loss is produced on either branch of an `if`: every one must be scaled
            results = [self._path_scaling(b, u, k_names, depth) for b, u in paths]
            bases = [b for b, _ in paths if b is not None]
            values = [d.value for b, u in paths for d in ([b] if b is not None else []) + u if d.value is not None]
            if _chosen_by_divisor(_separating_tests([b.stmt for b in bases], at), values, k_names):
                return results[0] if all(r == results[0] for r in results[1:]) else UNKNOWN
            return _alternatives(results)
        return self._path_scaling(base, updates, k_names, depth)

    def _path_scaling(self, base: Optional[Definition], updates: list[Definition], k_names, depth) -> Scaling:
        result = self._definition_scaling(base, k_names, depth) if base is not None else NEUTRAL
        for update in updates:
            updated = self._updated(result, update, k_names, depth)
            result = updated if updated is not None else result
        return result

    def _updated(self, result: Scaling, update: Definition, k_names, depth) -> Optional[Scaling]:
        """The scaling after an in-place update (`loss /= k`, `loss += aux`, `loss.div_(k)`,
        `loss.add_(x)`); None for an update that does not change how the value is scaled."""
        if update.value is None:
            return None
        if _process_count(_update_divisor(update), k_names):
            return None  # `rt /= world_size`, `rt.div_(world_size)`: a mean over ranks
        if update.kind == "aug" and update.op in _DIVIDING_AUG:
            by = _factor(_number(update.value), divides=update.op != "MultiplyAssign")
            return _divide(result, mentions(update.value, k_names), by)
        if update.kind == "aug" and update.op in _SUMMING_AUG:
            return _combine_sum(result, self.scaling(update.value, update.stmt, k_names, depth + 1))
        if update.kind == "inplace" and update.op in _DIVIDING_METHODS:
            return _divide(result, mentions(update.value, k_names))
        if update.kind == "inplace" and update.op == "add_":
            return UNKNOWN
        return None

    def _definition_scaling(self, definition: Definition, k_names, depth) -> Scaling:
        if definition.kind == "assign" and definition.value is not None:
            return self.scaling(definition.value, definition.stmt, k_names, depth + 1)
        if definition.kind == "unpack" and isinstance(definition.value, ast.IfExp):
            # `logits, loss = m.f(x) if not hasattr(m, "module") else m.module.f(x)`: each call is a way
            return _alternatives([
                self._definition_scaling(replace(definition, value=choice), k_names, depth + 1)
                for choice in choices(definition.value)
            ])
        if definition.kind == "unpack" and isinstance(definition.value, ast.Call):
            helper = self._helper_returns(definition.value, definition.stmt)
            if helper is not None:
                return self._returns_scaling(helper, k_names, depth, definition.index)
            return self._source(definition.value, k_names, definition.stmt)
        if definition.kind == "unpack" and isinstance(definition.value, (ast.Tuple, ast.List)) and len(definition.index) == 1:
            # `w, h = b[2] - b[0], b[3] - b[1]`: each name is its own element
            element = definition.bound_value()
            return self.scaling(element, definition.stmt, k_names, depth + 1) if element is not None else UNKNOWN
        if definition.kind == "unpack" and isinstance(definition.value, (ast.ListComp, ast.GeneratorExp)) and len(definition.index) == 1:
            # `a, b = [loss_fn(x, y) for x, y in zip(logits, labels)]`: every element is made alike
            return self.scaling(definition.value.elt, definition.stmt, k_names, depth + 1)
        if definition.kind == "unpack" and isinstance(definition.value, ast.Name):
            # `loss, items = loss` (a criterion that may return a tuple): its parts are as scaled as it
            return self.scaling(definition.value, definition.stmt, k_names, depth + 1)
        if definition.kind == "param":
            return self._handed_in(definition, k_names, depth)
        if definition.kind == "with" and isinstance(definition.value, ast.Call) and _scales_loss_for_a_context(definition.value):
            # apex: `with amp.scale_loss(loss, optimizer) as scaled_loss:` multiplies by the loss
            # scale, which is taken off the gradients again; the window's scale is the loss's
            return self.scaling(definition.value.args[0], definition.stmt, k_names, depth + 1)
        return UNKNOWN

    def _handed_in(self, param: Definition, k_names, depth) -> Scaling:
        """A parameter (`def _backward_step(self, loss, ...)`): what this module's calls of the
        function hand it, when they all agree; unknown when none is in sight or they differ."""
        scope = param.stmt.scope
        if scope is self._module_scope or param.name in {"self", "cls"}:
            return UNKNOWN
        if _number_default(scope, param.name) and all(
            all(_number(arg) is not None for arg in _bound_to(site.call, scope.params, {param.name}))
            for site in self._calls_of(scope)
        ):
            return NEUTRAL  # `eps=1e-7`, never handed anything but a number
        results = []
        sites = [(site, self) for site in self._calls_of(scope)] or self.calls_from_importers(scope)
        for site, flow in sites:
            bound = _bound_to(site.call, scope.params, {param.name})
            if len(bound) != 1 or isinstance(bound[0], ast.Starred):
                return UNKNOWN
            results.append(flow.scaling(bound[0], site.stmt, k_names, depth + 1))
            if results[-1] != results[0]:
                return UNKNOWN
        return results[0] if results else UNKNOWN

    def definitions_reaching(self, expr: ast.expr, at: Stmt, depth: int = 0) -> list[Definition]:
        """The definitions whose value `expr` holds at `at`: the one that reaches it and the updates
        after it, followed through plain copies (`loss = lm_loss`) and, for a parameter, into the
        arguments this module's calls hand it (three copies or calls deep)."""
        name = dotted(expr)
        if name is None or depth > 3:
            return []
        base, updates = reaching(name, at.scope, at.order, at)
        if base is None:
            return updates
        found = [base, *updates]
        if base.kind == "assign" and base.value is not None and dotted(base.value) not in {None, name}:
            found += self.definitions_reaching(base.value, base.stmt, depth + 1)
        elif base.kind == "param" and base.name not in {"self", "cls"} and base.stmt.scope is not self._module_scope:
            function = base.stmt.scope
            for site in self._calls_of(function):
                bound = _bound_to(site.call, function.params, {base.name})
                if len(bound) == 1 and not isinstance(bound[0], ast.Starred):
                    found += self.definitions_reaching(bound[0], site.stmt, depth + 1)
        return found

    def handed_scaling(self, tensor: ast.expr, at: Stmt, k_names: set[str], call: ast.Call, caller: Stmt, caller_flow: DataFlow) -> Scaling:
        """The scale of a parameter handed to backward as it is (`def backward_step(loss, ...):
        loss.backward()`), read from the argument of the call that runs this function."""
        name = dotted(tensor)
        base, updates = reaching(name, at.scope, at.order, at) if isinstance(tensor, ast.Name) and name else (None, [])
        if base is None or base.kind != "param" or updates or base.name in {"self", "cls"}:
            return UNKNOWN
        bound = _bound_to(call, at.scope.params, {base.name})
        if len(bound) != 1 or isinstance(bound[0], ast.Starred):
            return UNKNOWN
        return caller_flow.scaling(bound[0], caller, k_names)

    def _calls_of(self, function: Scope) -> list[CallSite]:
        """The call sites of this module that run `function` (looked up by its name, then resolved)."""
        memo: dict[int, list[CallSite]] = self.__dict__.setdefault("_calls_of_memo", {})
        found = memo.get(id(function))
        if found is None:
            found = memo[id(function)] = _sites_running(self, function, lambda callee: callee.scope is function)
        return found

    def calls_from_importers(self, function: Scope) -> list[tuple[CallSite, DataFlow]]:
        """The call sites in the project's other modules that run `function` (a project optimizer
        class's `step(loss, ...)` driven from the training script), each with its module's flow.
        Asked only when this module never calls the function itself."""
        memo: dict[int, list[tuple[CallSite, DataFlow]]] = self.__dict__.setdefault("_importer_calls_memo", {})
        if id(function) in memo:
            return memo[id(function)]
        found: list[tuple[CallSite, DataFlow]] = []
        memo[id(function)] = found
        from accumlint.analysis.calls import analysed  # calls imports this module

        module = self.resolver.module
        if module.index is None or module.path is None or function.node is None:
            return found
        here = module.index.resolved(module.path)
        for path in module.index.importers(here):
            other = analysed(module.index, path)
            if other is None:
                continue
            sites = _sites_running(other.flow, function, lambda callee: _runs(callee, here, function))
            if sites:
                module.consulted.add(module.index.resolved(path))  # its calls decide this module's findings
                found += [(site, other.flow) for site in sites]
        return found

    def _source(self, call: ast.Call, k_names, at: Stmt) -> Scaling:
        """A call we cannot see into: a fresh, unscaled loss (a criterion, a model), unless it is
        handed k (it may divide inside) or it is a method of the object's own class hierarchy
        that could not be resolved (`self.compute_loss()` inherited from a library class)."""
        if self.graph_free and method_of(call)[1] in keras.LOSS_METHODS and not self.resolver.resolve(call, at.scope):
            return SOURCE if not any(mentions(a, k_names) for a in call.args) else UNKNOWN  # Keras's own loss
        if self._inherited_unseen(call, at) or self.resolver.points_into_project(call):
            return UNKNOWN
        if any(mentions(arg, k_names) for arg in call.args) or any(mentions(kw.value, k_names) for kw in call.keywords):
            return UNKNOWN
        return SOURCE

    def _division(self, call: ast.Call, at: Stmt) -> Optional[tuple[ast.expr, ast.expr]]:
        """(numerator, divisor) of `x.div(n)`, `x.true_divide(n)` or `torch.div(x, n)`."""
        receiver, method = method_of(call)
        if receiver is None or method not in _DIVIDING_NAMES or call.keywords:
            return None
        if self._imported_module(receiver, at):
            return (call.args[0], call.args[1]) if len(call.args) == 2 else None
        return (receiver, call.args[0]) if len(call.args) == 1 else None

    def _handed_back(self, call: ast.Call, at: Stmt) -> Optional[ast.expr]:
        """The argument a project function returns as it was handed in, up to copies, casts and a
        mean over ranks (`rt = t.clone(); dist.all_reduce(rt); rt /= n; return rt` called with
        `n` = `args.world_size`): read at this call, whatever other calls of the function hand it."""
        callee = self.callee_of(call, at)
        if callee is None or not callee.scope.returns:
            return None
        params = callee.scope.params
        ranks = frozenset(p for p in params if any(_process_count(arg, set()) for arg in _bound_to(call, params, {p})))
        found = {_passed_param(value, stmt, ranks) for value, stmt in callee.scope.returns}
        param = found.pop() if len(found) == 1 else None
        if param is None:
            return None
        bound = _bound_to(call, params, {param})
        return bound[0] if len(bound) == 1 and not isinstance(bound[0], ast.Starred) else None

    def _helper_returns(self, call: ast.Call, at: Stmt) -> Optional[tuple[list[tuple[ast.expr, Stmt]], DataFlow]]:
        """The return values of the function the call runs, with the data flow of its module."""
        callee = self.callee_of(call, at)
        if callee is None:
            return self._aliased_returns(call, at)
        if not callee.scope.returns:
            return None
        return callee.scope.returns, callee.module.flow

    def _aliased_returns(self, call: ast.Call, at: Stmt) -> Optional[tuple[list[tuple[ast.expr, Stmt]], DataFlow]]:
        """`forward = self.model.forward if dpo else self.model.forward_old`, then `forward(...)`:
        the returns of every function the name may hold, when each is a function of one module."""
        if not isinstance(call.func, ast.Name):
            return None
        base, updates = reaching(call.func.id, at.scope, at.order, at)
        if base is None or updates or base.kind != "assign" or base.value is None:
            return None
        options = choices(base.value)
        if len(options) < 2:
            return None
        callees = []
        for choice in options:
            chosen = ast.Call(func=choice, args=call.args, keywords=call.keywords)
            callee = self.resolver.resolve(chosen, at.scope)
            if callee is None or not callee.scope.returns:
                return None
            callees.append(callee)
        if len({id(c.module) for c in callees}) != 1:
            return None
        return [ret for c in callees for ret in c.scope.returns], callees[0].module.flow

    def callee_of(self, call: ast.Call, at: Stmt) -> Optional[Callee]:
        """The project function a call runs: a function or method the resolver finds, or the
        `forward` of a project module called as `model(x)`."""
        return self.resolver.resolve(call, at.scope) or self._module_forward(call, at)

    def _module_forward(self, call: ast.Call, at: Stmt) -> Optional[Callee]:
        """`criterion(pred, target)` with `criterion = YoloLoss(...)` (or `self.criterion` built so in
        the class), a class of the project: the `forward` that calling it runs (where its losses say how they are reduced)."""
        if not isinstance(call.func, (ast.Name, ast.Attribute)):
            return None
        forward = ast.Call(func=ast.Attribute(value=call.func, attr="forward", ctx=ast.Load()), args=call.args, keywords=call.keywords)
        found = self.instance_method(forward, at)
        name = dotted(call.func)
        if found is None and name is not None:  # through a data-parallel wrapper: the wrapped model's
            cls = self.resolver.model_class(name, at.scope)
            found = self.class_method(cls, "forward", at.scope) if cls is not None else None
        return found

    def _returns_scaling(self, helper, k_names, depth, index=()) -> Scaling:
        returns, flow = helper
        results = []
        kept = []
        for value, stmt in returns:
            for position in index:
                if isinstance(value, ast.Tuple) and position >= len(value.elts) and not any(isinstance(e, ast.Starred) for e in value.elts):
                    break  # `return pred, target` has no third element: another return gives the loss
                if isinstance(value, ast.Tuple) and position < len(value.elts):
                    value = value.elts[position]
                else:
                    return UNKNOWN
            else:
                results.append(flow.scaling(value, stmt, k_names, depth + 1))
                kept.append((value, stmt))
        if not results:
            return UNKNOWN
        first = results[0]
        if all(r == first for r in results[1:]):
            return first
        if _chosen_by_divisor(_separating_tests([stmt for _, stmt in kept], None), [v for v, _ in kept], k_names):
            return UNKNOWN
        return _alternatives(results)  # each return is a way the loss can take

    def _call_scaling(self, call: ast.Call, at: Stmt, k_names, depth) -> Scaling:
        receiver, method = method_of(call)
        if receiver is not None and method == "sum" and keyword(call, "dim") is None:
            # `per_token.sum()`, `torch.sum(per_token)`: the whole sum (`.sum(-1)` sums a part only)
            whole = call.args[0] if self._imported_module(receiver, at) and len(call.args) == 1 else None
            if whole is None and not call.args and not self._imported_module(receiver, at):
                whole = receiver
            if whole is not None:
                inner = self.scaling(whole, at, k_names, depth + 1)
                return inner if self._mean_loss(whole, at) else _summed(inner)
        split = self._division(call, at)
        if split is not None and _process_count(split[1], k_names):
            return self.scaling(split[0], at, k_names, depth + 1)  # `loss.div(world_size)`: a mean over ranks
        if receiver is not None and method in _DIVIDING_METHODS:
            inner = self.scaling(receiver, at, k_names, depth + 1)
            number = _number(call.args[0]) if len(call.args) == 1 and not call.keywords else None
            if method.startswith(("mul", "multiply")):
                return _divide(inner, any(_reciprocal_of_k(a, k_names) for a in call.args), _factor(number, divides=False))
            return _divide(inner, any(mentions(a, k_names) for a in call.args), _factor(number, divides=True))
        if receiver is not None and method in _MODULE_REDUCTIONS and call.args and self._imported_module(receiver, at):
            return self.scaling(call.args[0], at, k_names, depth + 1)
        if receiver is not None and method in _PASS_THROUGH_METHODS:
            return self.scaling(receiver, at, k_names, depth + 1)
        if receiver is not None and method == "scale" and call.args:
            return self.scaling(call.args[0], at, k_names, depth + 1)
        if receiver is not None and method in keras.SCALE_LOSS_METHODS and call.args:  # a loss-scale wrapper's
            return self.scaling(call.args[0], at, k_names, depth + 1)
        full = dotted(call.func) or ""
        if full.rsplit(".", 1)[-1] in {"div", "divide", "true_divide", "mul", "multiply"} and len(call.args) >= 2:
            inner = self.scaling(call.args[0], at, k_names, depth + 1)
            return _divide(inner, mentions(call.args[1], k_names))
        if full in {"sum", "torch.stack", "torch.cat"}:
            return UNKNOWN
        passed = self._handed_back(call, at)
        if passed is not None:  # `loss = reduce_mean(loss, world_size)`: as scaled as what it is handed
            return self.scaling(passed, at, k_names, depth + 1)
        helper = self._helper_returns(call, at)
        if helper is not None:
            return self._returns_scaling(helper, k_names, depth)
        reduction = self._reduction(call, at)
        if reduction == "sum":
            return SUMMED
        if reduction == "unknown":
            return UNKNOWN
        return self._source(call, k_names, at)

    def _mean_loss(self, expr: ast.expr, at: Stmt, depth: int = 0) -> bool:
        """A loss already reduced to one mean value (`criterion(out, y)`, `F.mse_loss(out, y)`,
        `outputs.loss` by their names, with no `reduction` saying otherwise): summing it changes nothing."""
        if depth > 4:
            return False
        name = dotted(expr)
        if isinstance(expr, ast.Name) and name is not None:
            base, _ = reaching(name, at.scope, at.order, at)
            return base is not None and base.kind == "assign" and base.value is not None and self._mean_loss(base.value, base.stmt, depth + 1)
        if isinstance(expr, ast.Attribute):
            return expr.attr == "loss"
        if isinstance(expr, ast.Call):
            receiver, method = method_of(expr)
            if receiver is not None and method in _PASS_THROUGH_METHODS - {"sum"}:
                return self._mean_loss(receiver, at, depth + 1)
            words = re.split(r"[^a-z]+", last_part(dotted(expr.func)).lower())
            return any(w.endswith(("loss", "crit", "criterion")) for w in words) and self._reduction(expr, at) in {None, "mean"}
        return False

    def _reduction(self, call: ast.Call, at: Stmt) -> Optional[str]:
        """How the loss this call computes is reduced over samples: by its own keywords
        (`F.cross_entropy(..., reduction='sum')`) or by those its criterion was built with
        (`crit = nn.MSELoss(reduction='sum')`, in this function, the module or the class's methods).
        A criterion built more than one way is "unknown"."""
        own = torch_core.loss_reduction(call)
        if own is not None:
            return own
        name = dotted(call.func)
        if name is None:
            return None
        scopes = list(at.scope.class_scopes) if name.startswith("self.") else at.scope.sight()
        built = {
            torch_core.loss_reduction(d.value)
            for scope in scopes for d in scope.definitions(name)
            if d.kind == "assign" and isinstance(d.value, ast.Call)
        }
        if len(built) == 1:
            return built.pop()
        return "unknown" if built - {None, "mean"} else None

    def _imported_module(self, receiver: ast.expr, at: Stmt) -> bool:
        """`torch`, `ops` (from keras import ops), `torch.nn.functional`: imported, never rebound here."""
        name = dotted(receiver)
        if name is None:
            return False
        head = name.split(".", 1)[0]
        return head in self.collected.imports and not any(scope.definitions(head) for scope in at.scope.sight())

    def _inherited_unseen(self, call: ast.Call, at: Stmt) -> bool:
        """`self.m()` / `super().m()` that is no attribute set in this file, in a class with a base
        we cannot read (`transformers.Trainer`), or a method its own class leaves to subclasses:
        the method that runs may do anything."""
        if self.resolver.left_to_subclasses(call, at.scope):
            return True
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        owner = func.value
        own = owner.id if isinstance(owner, ast.Name) and owner.id in {"self", "cls"} else None
        if own is None and not (isinstance(owner, ast.Call) and dotted(owner.func) == "super"):
            return False
        if own and any(scope.definitions(f"{own}.{func.attr}") for scope in self.collected.scopes):
            return False  # `self.criterion = nn.CrossEntropyLoss()`: a callable object
        scope = enclosing_class(at.scope)
        if scope is None or scope.class_node is None:
            return False
        if own and self.resolver.sets_attribute(scope.class_node, f"{own}.{func.attr}"):
            return False  # `self.model = ...` in a base class of another module
        classes = self.collected.classes
        return any(dotted(base) not in classes and dotted(base) != "object" for base in scope.class_node.bases)

    # --- graphs -------------------------------------------------------------------------
    def carries_graph(self, expr: ast.expr, at: Stmt, depth: int = 0) -> bool:
        """True only when the value is shown to hold an autograd graph (a model or loss output).
        Decided on the value: an operand that passed through `.detach()`/`.item()`/`.data` carries
        none wherever that sits in the expression."""
        if depth > 12 or at.no_grad or self.graph_free:
            return False
        if isinstance(expr, ast.Attribute) and expr.attr in _NO_GRAPH_ATTRIBUTES:
            return False  # `criterion(out, y).data`, `loss.data`: of any receiver, no graph
        name = dotted(expr)
        if name is not None:
            base, updates = reaching(name, at.scope, at.order)
            if base is None:
                if self._numeric_module(name):
                    return False
                field = self._slot_carries(expr, at, depth) if isinstance(expr, ast.Attribute) else None
                if field is not None:
                    return field
                return isinstance(expr, ast.Attribute) and self.carries_graph(expr.value, at, depth + 1)
            if self._definition_carries(base, depth):
                return True
            if any(u.kind == "inplace" and u.op == "requires_grad_" and not u.stmt.no_grad for u in updates):
                return True  # `real.requires_grad_(True)`: a leaf whose uses build a graph
            if self._appended_carry(name, base, at) or self._stored_carry(name, base, at, depth):
                return True
            return any(
                u.kind == "aug" and u.value is not None and self.carries_graph(u.value, u.stmt, depth + 1)
                for u in updates
            )
        if isinstance(expr, ast.Call):
            return self._call_carries(expr, at, depth)
        if isinstance(expr, ast.Subscript):
            if _index_part(expr):
                return False  # `out.max(1)[1]`, `out.topk(k)[1]`: indices carry no graph
            slot = self._slot_carries(expr, at, depth)
            if slot is None and isinstance(expr.slice, ast.Slice):
                slot = self._tail_carries(expr, at, depth)
            if slot is not None:
                return slot
            roots = set() if narrowed_to_container(dotted(expr.value), at) else self.backward_roots(at.scope)
            element = _result_element(expr, at, roots)
            if element is not None:  # `out[1]` of `out = model.forward_loss(b)`: as `_, n = model.forward_loss(b)`
                return self._definition_carries(element, depth + 1)
            return self.carries_graph(expr.value, at, depth + 1)
        if isinstance(expr, ast.Attribute):
            if expr.attr == "indices" and isinstance(expr.value, ast.Call) and method_of(expr.value)[1] in _INDEX_RETURNING:
                return False
            return self.carries_graph(expr.value, at, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self.carries_graph(expr.left, at, depth + 1) or self.carries_graph(expr.right, at, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self.carries_graph(expr.operand, at, depth + 1)
        if isinstance(expr, (ast.Tuple, ast.List)):
            return any(self.carries_graph(e, at, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.Dict):  # `{"ce": ce_loss, "kl": kl_loss}`: its values
            return any(self.carries_graph(v, at, depth + 1) for v in expr.values)
        if isinstance(expr, ast.IfExp):
            return self.carries_graph(expr.body, at, depth + 1) and self.carries_graph(expr.orelse, at, depth + 1)
        if isinstance(expr, ast.NamedExpr):
            return self.carries_graph(expr.value, at, depth + 1)
        return False

    def _appended_carry(self, name: str, base: Definition, at: Stmt) -> bool:
        """`outs = []`, then `outs.append(loss)` before `at` with `loss.backward()`: a list of the
        losses handed to backward holds their graphs (`sum(outs) / len(outs)` keeps every one).
        Other values appended are not followed: what a list of them is for is not in sight."""
        if base.kind != "assign" or not isinstance(base.value, ast.List):
            return False
        roots = self.backward_roots(at.scope)
        for value, stmt in appended(name, base, at):
            held = dotted(value)
            definition = reaching(held, stmt.scope, stmt.order, stmt)[0] if held is not None else None
            if definition is not None and id(definition) in roots:
                return True
        return False

    def _stored_carry(self, name: str, base: Definition, at: Stmt, depth: int) -> bool:
        """`dist = torch.zeros(n, m).cuda()`, then `dist[i, j] = loss_ij` before `at`: a buffer
        written by index with graph-carrying values holds their graphs (its `grad_fn` chains every
        store), though it was made without one."""
        if base.kind != "assign" or not self._fresh_buffer(base.value):
            return False
        for stmt in at.scope.stmts:
            node = stmt.node
            if not (base.order < stmt.order < at.order) or stmt.no_grad or not isinstance(node, ast.Assign):
                continue
            if stmt.compatible(at) and any(
                isinstance(target, ast.Subscript) and dotted(target.value) == name for target in node.targets
            ) and self.carries_graph(node.value, stmt, depth + 1):
                return True
        return False

    def _fresh_buffer(self, value: Optional[ast.expr]) -> bool:
        """`torch.zeros(n, m)`, also moved or cast (`.cuda()`, `.to(device)`, `.float()`)."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES:
            value = value.func.value
        name = dotted(value.func) if isinstance(value, ast.Call) else None
        return name is not None and self._torch_function(name) and name.rsplit(".", 1)[1] in _BUFFER_FACTORIES

    def _slot_carries(self, expr: ast.Subscript | ast.Attribute, at: Stmt, depth: int) -> Optional[bool]:
        """`output["metrics"]` or `outputs.memory` where `output` is a dict display in sight, or
        what the project code it comes from returns: dict displays, or output objects built with
        that field (`return Output(loss=..., memory=h.detach())`). What the slot holds; None when
        the code does not show it."""
        slot, holder = _slot_name(expr), dotted(expr.value)
        if slot is None or holder is None:
            return None
        base, updates = reaching(holder, at.scope, at.order, at)
        if base is None or updates or base.kind != "assign" or base.stmt.no_grad:
            return None
        displays: list[tuple[ast.expr, Stmt, DataFlow]]
        if isinstance(base.value, ast.Dict):
            displays = [(base.value, base.stmt, self)]
        elif isinstance(base.value, ast.Call):
            callee = self._producer(base.value, base.stmt)
            if callee is None or not callee.scope.returns:
                return None
            displays = [(value, stmt, callee.module.flow) for value, stmt in callee.scope.returns]
        else:
            return None
        found = []
        for display, stmt, flow in displays:
            value = _slot_value(display, slot)
            if value is None:
                return None
            found.append(_returned_graph(flow, value, stmt, depth))
        return any(found)

    def _producer(self, call: ast.Call, at: Stmt) -> Optional[Callee]:
        """The project code whose return a call's result is: a function or method, or the forward
        (or named method) of a project model, also behind a data-parallel wrapper."""
        return self.resolver.resolve(call, at.scope) or self.instance_method(call, at) or self._model_method(call, at)

    def _tail_carries(self, expr: ast.Subscript, at: Stmt, depth: int) -> Optional[bool]:
        """`ret[1:]` where `ret = model(x)` and the project code that runs returns sequences it
        builds in sight (`return [loss] + new_mems`, `return loss, *mems`): whether what sits from
        that position on is shown to hold a graph (Transformer-XL hands back its memories made
        under `no_grad`); None when the code does not show it."""
        start = _slice_start(expr.slice)
        name = dotted(expr.value)
        if start is None or name is None:
            return None
        base, updates = reaching(name, at.scope, at.order, at)
        if base is None or updates or base.kind != "assign" or base.stmt.no_grad or not isinstance(base.value, ast.Call):
            return None
        callee = self._producer(base.value, base.stmt)
        tail = returned_tail(callee.scope, start) if callee is not None else None
        if callee is None or not tail:
            return None
        return any(_returned_graph(callee.module.flow, value, stmt, depth) for value, stmt in tail)

    def definition_carries(self, definition: Definition) -> bool:
        """The value a definition binds is shown to hold an autograd graph (see carries_graph)."""
        return self._definition_carries(definition, 0)

    def _definition_carries(self, definition: Definition, depth: int) -> bool:
        if definition.stmt.no_grad or definition.value is None or self.graph_free:
            return False
        if definition.kind in {"assign", "unpack"} and id(definition) in self.backward_roots(definition.stmt.scope):
            return True
        if definition.kind == "assign":
            return self.carries_graph(definition.value, definition.stmt, depth + 1)
        if definition.kind == "unpack" and isinstance(definition.value, (ast.Tuple, ast.List)) and definition.index:
            element = definition.bound_value()  # `a, b = model(x), model(y)`: each name is its own element
            return element is not None and self.carries_graph(element, definition.stmt, depth + 1)
        if definition.kind == "unpack" and isinstance(definition.value, ast.Call):
            _, method = method_of(definition.value)
            if method in _INDEX_RETURNING and definition.index[:1] == (1,):
                return False  # (values, indices): indices carry no graph
            if definition.index:
                returned = self._helper_graph(definition.value, definition.stmt, depth + 1, definition.index)
                if returned is not None:  # `loss, avg = step(batch)` against `return loss, loss.item() / n`
                    return returned
            return self._call_carries(definition.value, definition.stmt, depth + 1, definition)
        if definition.kind == "for":
            element = iterated_element(definition.value, definition.index)
            return element is not None and self._collection_carries(element, definition.stmt, depth + 1)
        return False

    def _collection_carries(self, expr: ast.expr, at: Stmt, depth: int) -> bool:
        """A collection built in sight holds graph-carrying values (`terms = {"ce": ce, "kl": kl}`);
        a loader or any other iterable the analysis cannot see into does not count."""
        if isinstance(expr, (ast.List, ast.Tuple, ast.Dict)):
            return self.carries_graph(expr, at, depth + 1)
        name = dotted(expr)
        if name is None:
            return False
        base, _ = reaching(name, at.scope, at.order)
        if base is not None and base.kind == "assign" and isinstance(base.value, ast.Call) and not base.stmt.no_grad:
            # `losses = self.train_one_batch(x)`: a collection the project's function returns
            return self._helper_graph(base.value, base.stmt, depth + 1) is True
        if base is None or base.kind != "assign" or not isinstance(base.value, (ast.List, ast.Tuple, ast.Dict)):
            return False
        return self.carries_graph(base.value, base.stmt, depth + 1)

    def _numeric_module(self, name: str) -> bool:
        """`np.cos`, `math.exp`: a library that never builds an autograd graph."""
        origin = self.collected.imports.get(name.split(".", 1)[0], "")
        return numeric_origin(origin)

    def canonical(self, name: str) -> str:
        """`grad` imported from torch.autograd -> `torch.autograd.grad`."""
        return self.resolver.canonical(name)

    def _torch_function(self, name: str) -> bool:
        """`torch.cat`, `F.relu`: a function of the torch namespace, not a method of a value."""
        head = name.split(".", 1)[0]
        return "." in name and self.collected.imports.get(head, "").split(".", 1)[0] == "torch"

    def _argument_carries(self, expr: ast.expr, at: Stmt, depth: int) -> bool:
        """An argument of a graph-transparent call: graph-carrying, or a global or attribute the
        analysis cannot see into (it may be a tensor that requires grad, `self.W`)."""
        name = dotted(expr)
        if name is not None and not (isinstance(expr, ast.Attribute) and expr.attr in _NO_GRAPH_ATTRIBUTES):
            base, _ = reaching(name, at.scope, at.order)
            if base is None and not self._numeric_module(name):
                module_base, _ = reaching(name, self._module_scope, 1 << 30)
                if module_base is None:
                    return True
                return self._definition_carries(module_base, depth + 1)
        if isinstance(expr, ast.Starred):
            return self._argument_carries(expr.value, at, depth + 1)
        if isinstance(expr, (ast.List, ast.Tuple)):
            return any(self._argument_carries(e, at, depth + 1) for e in expr.elts)
        return self.carries_graph(expr, at, depth + 1)

    def _arguments_carry(self, call: ast.Call, at: Stmt, depth: int) -> bool:
        values = [*call.args, *(kw.value for kw in call.keywords)]
        return any(self._argument_carries(v, at, depth) for v in values)

    def _local_value(self, expr: ast.expr, at: Stmt) -> bool:
        """A receiver whose value the analysis sees: an expression, or a local name assigned in this
        function (not a parameter, a module object or an attribute of `self`)."""
        name = dotted(expr)
        if name is None:
            return True
        if isinstance(expr, ast.Attribute) and expr.attr in _NO_GRAPH_ATTRIBUTES:
            return True
        base, _ = reaching(name, at.scope, at.order)
        return base is not None and base.kind in {"assign", "unpack"}

    def _call_carries(self, call: ast.Call, at: Stmt, depth: int, element: Optional[Definition] = None) -> bool:
        receiver, method = method_of(call)
        if method in _NO_GRAPH_METHODS or method is None:
            return False
        if any(kw.arg == "requires_grad" and is_true(kw.value) for kw in call.keywords):
            return True  # a leaf that requires grad: what is computed from it builds a graph
        full = dotted(call.func) or ""
        last = full.rsplit(".", 1)[-1]
        if receiver is not None and method in _PASS_THROUGH_METHODS | _DIVIDING_METHODS | {"scale"}:
            if not self._torch_function(full) and not self._numeric_module(full):
                # `loss.float()`, `out.to(device)`: tensor methods keep the graph
                return self.carries_graph(receiver, at, depth + 1)
        if self.canonical(full) == "torch.autograd.grad":
            # gradients carry no graph unless asked to (`create_graph=True`, a gradient penalty)
            return is_true(keyword(call, "create_graph")) and self._arguments_carry(call, at, depth)
        if last == "round" and self._torch_function(full):
            return self._arguments_carry(call, at, depth)  # `torch.round(x)` keeps a graph (zero gradient)
        if last in _NO_GRAPH_FUNCTIONS or any(h in last.lower() for h in _NO_GRAPH_NAME_HINTS):
            return False
        if full and self._numeric_module(full):
            return False
        if self._framework_class(full):
            return False  # `Accelerator(...)`, `GradScaler()`, `DataLoader(...)`: an object, not a tensor
        if last in _WRAPPERS or (last[:1].isupper() and not last.isupper()):
            # `Variable(x.data)`, `copy.deepcopy(m)`, a class built from values: what it is given
            values = [*call.args, *(kw.value for kw in call.keywords)]
            return any(self.carries_graph(v.value if isinstance(v, ast.Starred) else v, at, depth + 1) for v in values)
        if full and self._torch_function(full):
            return self._arguments_carry(call, at, depth)
        if full in _NUMERIC_BUILTINS and full not in self.collected.imports:
            # `max(temp * 0.99, 0.5)`: the builtin on numbers; a graph only if an argument has one
            return any(self.carries_graph(arg, at, depth + 1) for arg in call.args if not isinstance(arg, ast.Starred))
        returns = self._helper_graph(call, at, depth)
        if returns is not None:  # a local function or method: what it returns (`tuner.tune(pred)`)
            return returns
        if receiver is not None and self._local_value(receiver, at) and not self._names_a_model(dotted(receiver), at):
            # `(pred.detach() - y).abs()`: a method of a value the analysis sees (a model's method,
            # `model.evaluate(data)` after `model = amp.initialize(model)`, is read below)
            return self.carries_graph(receiver, at, depth + 1) or self._arguments_carry(call, at, depth)
        return self._unseen_call_carries(call, at, depth, element)

    def _unseen_call_carries(self, call: ast.Call, at: Stmt, depth: int, element: Optional[Definition] = None) -> bool:
        """A call the analysis cannot read (a library, an object handed in): a graph only where the
        code shows one going in or starting there. A model's forward starts one (`model(x)`,
        `self.net.forward(x)`); a graph-carrying argument goes in (`criterion(out, y)`,
        `hvd.allreduce(loss)`). Anything else is unknown, and unknown is no graph: `stats` of
        `loss, stats = self.actor(batch)` may hold floats."""
        receiver, method = method_of(call)
        func = dotted(call.func) or ""
        if method not in _MODEL_HOUSEKEEPING and not _gradient_getter(call) and self._names_a_model(func, at):
            # `model(x)`, `self.net.forward(x)`, `model.head(x)`, `rnn(x, h)` with `rnn = nn.GRU(...)`.
            # Of an unpacked result only the output proper (`loss, stats = self.actor(batch)`: `stats`
            # may be floats) and a state the call is handed back (`out, hidden = model(x, hidden)`).
            if element is None or element.index[:1] in {(0,), ()}:
                return True
            read = self._model_element_reading(call, at, depth, element.index)
            if read is not None:
                return read  # the project's forward is in sight: what it returns there
            fed_back = any(element.name in names_in(arg) for arg in [*call.args, *(kw.value for kw in call.keywords)])
            return fed_back or any(hint in last_part(func).lower() for hint in _RECURRENT_HINTS)
        values = [*call.args, *(kw.value for kw in call.keywords)]
        if receiver is not None:
            values.append(receiver)
        return any(self.carries_graph(v.value if isinstance(v, ast.Starred) else v, at, depth + 1) for v in values)

    def _model_element_reading(self, call: ast.Call, at: Stmt, depth: int, index: tuple[int, ...]) -> Optional[bool]:
        """`out, dist = model(x)` (or `model.forward_boosting(x)`) with `model` an instance of a
        project module whose method returns `out, dist`: whether `dist` is shown to hold a graph
        there (computed from `out`, a buffer filled with losses; not `h.detach()`); None when that
        method or its returned tuples are out of sight."""
        callee = self._model_method(call, at)
        if callee is None:
            return None
        flow = callee.module.flow
        returned = returned_elements(callee.scope, index)
        if not returned:
            return None
        return any(_returned_graph(flow, value, stmt, depth) for value, stmt in returned)

    def _model_method(self, call: ast.Call, at: Stmt) -> Optional[Callee]:
        """The project method a model call runs: `model(x)` its class's `forward`, `model.encode(x)`
        that method."""
        func = call.func
        callee: Optional[Callee] = None
        if isinstance(func, ast.Attribute) and (owner := dotted(func.value)) is not None:
            # `model.encode(x)`; `model.forward(x)` also through a data-parallel wrapper
            cls = self.resolver.model_class(owner, at.scope) if func.attr == "forward" else self.resolver.instance_class(owner, at.scope)
            callee = self.class_method(cls, func.attr, at.scope) if cls is not None else None
        name = dotted(func)
        if callee is None and name is not None:  # `model(x)`, `self.model(x)`: the forward it runs
            cls = self.resolver.model_class(name, at.scope)
            callee = self.class_method(cls, "forward", at.scope) if cls is not None else None
        if callee is None and isinstance(func, ast.Name):
            callee = self._module_forward(call, at)
        return callee

    def output_field_reading(self, expr: ast.expr, at: Stmt) -> Optional[bool]:
        """`outputs.memory` or `outputs["memory"]` of a local output: whether the project code that
        builds it shows a graph in that field; None when it is out of sight (a library model, a
        model handed in)."""
        if isinstance(expr, (ast.Attribute, ast.Subscript)) and isinstance(expr.value, ast.Name):
            return self._slot_carries(expr, at, 0)
        return None

    def _names_a_model(self, name: Optional[str], at: Stmt) -> bool:
        """`self.model.head`, `rnn` with `rnn = nn.GRU(...)`: the name, or an object it is reached
        through, holds a model."""
        from accumlint.analysis.lifetimes import is_model  # lifetimes reads `reaching` from here

        return bool(name) and any(is_model(part, set()) or self._module_object(part, at) for part in _prefixes(name or ""))

    def _module_object(self, name: str, at: Stmt) -> bool:
        """`rnn = nn.GRU(8, 32)`, `self.trunk = torchvision.models.resnet18()`, `AutoModel.from_pretrained(...)`:
        a name the code binds to a torch module (its calls run a forward)."""
        scopes = list(at.scope.class_scopes) if name.startswith("self.") else at.scope.sight()
        for scope in scopes:
            for definition in scope.definitions(name):
                value = definition.value
                if definition.kind != "assign" or not isinstance(value, ast.Call):
                    continue
                built = self.canonical(dotted(value.func) or "")
                if built.startswith(("torch.nn.", "torchvision.models.")):
                    return True
                if built.endswith(".from_pretrained") and not last_part(built[: -len(".from_pretrained")]).endswith(_NOT_MODULE_CLASSES):
                    return True  # `AutoModel.from_pretrained(...)`, not `GPT2Tokenizer.from_pretrained(...)`
        return False

    def backward_roots(self, scope: Scope) -> set[int]:
        """The definitions that reach a backward call of this scope as its tensor (`loss` of
        `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`): a tensor
        handed to backward holds a graph, whatever produced it."""
        memo: dict[int, set[int]] = self.__dict__.setdefault("_backward_roots_memo", {})
        found = memo.get(id(scope))
        if found is not None:
            return found
        found = set()
        for site in scope.calls:
            receiver, method = method_of(site.call)
            if method not in {"backward", "manual_backward"}:
                continue
            tensor: Optional[ast.expr] = receiver
            if isinstance(receiver, ast.Call) and method_of(receiver)[1] == "scale" and receiver.args:
                tensor = receiver.args[0]
            elif site.call.args and (receiver is None or method == "manual_backward" or not self._local_value(receiver, site.stmt)
                                     or dotted(receiver) in {"accelerator", "fabric", "engine", "model_engine", "self.accelerator"}):
                tensor = site.call.args[0]
            slot = isinstance(tensor, ast.Subscript)
            while isinstance(tensor, ast.Subscript):  # `output["loss"].backward()`: the dict holds a graph
                tensor = tensor.value
            name = dotted(tensor) if tensor is not None else None
            if name is None or (slot and _slot_detached(scope, name, site.stmt.order)):
                continue
            base, _ = reaching(name, scope, site.stmt.order, site.stmt)
            if base is not None:
                self._add_outputs_on_the_way(base, found)
        if scope.is_lightning_training_step:  # Lightning backward-s what it returns
            for value, stmt in scope.returns:
                name = dotted(value)
                base = reaching(name, scope, stmt.order, stmt)[0] if name is not None else None
                if base is not None:
                    self._add_outputs_on_the_way(base, found)
        memo[id(scope)] = found
        return found

    def _add_outputs_on_the_way(self, root: Definition, found: set[int]) -> None:
        """The tensor handed to backward and the call results it is computed from in the function
        (`feat = self.trunk(x)`; `loss = self.head_loss(feat, y)`): outputs on the way to the loss.
        Only the first result of an unpacked call (`out, seconds = policy(x)`) and nothing that
        passed through a detach."""
        pending = [root]
        while pending and len(found) < 200:
            definition = pending.pop()
            if id(definition) in found or definition.stmt.no_grad or definition.value is None:
                continue
            if definition.kind == "unpack" and definition.index[:1] not in {(0,), ()} and definition is not root:
                continue
            found.add(id(definition))
            for name in read_outside_detach(definition.value):
                base, _ = reaching(name, definition.stmt.scope, definition.stmt.order, definition.stmt)
                if base is not None and base.kind in {"assign", "unpack"} and self._opaque_call(base.value, base.stmt):
                    if not self._builds_framework_object(base.value) and not self._returns_without_graph(base.value, base.stmt):
                        pending.append(base)

    def _returns_without_graph(self, call: Optional[ast.expr], at: Stmt) -> bool:
        """A project function that computes all it returns under no_grad (`@torch.no_grad()` on a
        method updating running class priors) and passes no parameter through: no output on the
        way to the loss, whatever the loss later reads from it."""
        if not isinstance(call, ast.Call):
            return False
        callee = self.resolver.resolve(call, at.scope) or self.instance_method(call, at)
        if callee is None or not callee.scope.returns:
            return False
        params = set(callee.scope.params) - {"self", "cls"}
        for value, stmt in callee.scope.returns:
            elements = value.elts if isinstance(value, ast.Tuple) else [value]
            if not stmt.no_grad or any(_passed_through(e, params, stmt) for e in elements):
                return False
        return True

    def _builds_framework_object(self, value: Optional[ast.expr]) -> bool:
        """`accelerator = Accelerator(...)`, `model, opt = accelerator.prepare(model, opt)`: the
        objects a loss is computed with, not outputs on the way to it."""
        if not isinstance(value, ast.Call):
            return False
        _, method = method_of(value)
        return method in _PREPARING_METHODS or self._framework_class(dotted(value.func) or "")

    def _framework_class(self, name: str) -> bool:
        """`Accelerator`, `GradScaler`, `DataLoader` as imported here: a framework's object."""
        return self.canonical(name).startswith(_FRAMEWORK_OBJECT_MODULES)

    def _opaque_call(self, value: Optional[ast.expr], at: Stmt) -> bool:
        """A call whose result the analysis cannot compute from what it is given: a function or an
        object's method (`self.trunk(x)`), not a method of a value in sight (`(g - 1).mean()`) nor
        a torch or numeric function."""
        if not isinstance(value, ast.Call):
            return False
        receiver, method = method_of(value)
        full = dotted(value.func) or ""
        if method in _NO_GRAPH_METHODS or self._torch_function(full) or self._numeric_module(full):
            return False
        if full in _ITERATING_BUILTINS and full not in self.collected.imports:
            return False  # `data = next(loader)`, `loader = iter(train_loader)`: data, not an output
        if full in _CONTAINER_BUILTINS and full not in self.collected.imports:
            return False  # `log = dict(loss=loss.item())`: what it holds is read from its arguments
        if full in _READ_FROM_ARGUMENTS and full not in self.collected.imports:
            return False  # `warm_up = min(1.0, warm_up + step)`: computed from its arguments
        return receiver is None or not self._local_value(receiver, at)

    def instance_method(self, call: ast.Call, at: Stmt) -> Optional[Callee]:
        """`tuner.tune(pred)` where `tuner = Tuner(...)` was built from a class of the project: that
        class's method (None when the receiver is anything else)."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        owner = dotted(func.value)
        if owner is None:
            return None
        if isinstance(func.value, ast.Name):
            base, _ = reaching(owner, at.scope, at.order)
            built = [base] if base is not None else []
        elif owner.startswith("self.") and owner.count(".") == 1 and at.scope.class_node is not None:
            # `self.tuner.tune(pred)` with `self.tuner = Tuner()` in a method of the class
            built = [
                d for scope in self.collected.scopes if scope.class_node is at.scope.class_node
                for d in scope.definitions(owner)
            ]
        else:
            return None
        made = [d for d in built if not (isinstance(d.value, ast.Constant) and d.value.value is None)]
        if not made or any(d.kind != "assign" or not isinstance(d.value, ast.Call) for d in made):
            return None  # bound to something else than one class's instance somewhere
        classes = {dotted(d.value.func) for d in made if isinstance(d.value, ast.Call)}
        if len(classes) != 1:
            return None
        cls = classes.pop()
        if cls is None or not class_like(cls):
            return None
        return self.class_method(cls, func.attr, at.scope)

    def class_method(self, cls: str, method: str, scope: Scope) -> Optional[Callee]:
        """`cls.method` of a class named `cls` where `scope` sees it (a class of the project)."""
        call = ast.Call(func=ast.Attribute(value=ast.parse(cls, mode="eval").body, attr=method), args=[], keywords=[])
        return self.resolver.resolve(call, scope)

    def _helper_graph(self, call: ast.Call, at: Stmt, depth: int, index: tuple[int, ...] = ()) -> Optional[bool]:
        """What a local helper returns (the element at `index` of a returned tuple): graph-free when
        every return value is graph-free and reads the helper's parameters only through a detach
        (`return x.data.clone()`); None when unknown."""
        if depth > 12:
            return False  # as deep as carries_graph follows a value
        callee = self.resolver.resolve(call, at.scope) or self.instance_method(call, at)
        if callee is None or not callee.scope.returns:
            return None
        flow = callee.module.flow
        params = set(callee.scope.params) - {"self", "cls"}
        read: set[str] = set()  # the parameters a return value reads other than through a detach
        returned = returned_elements(callee.scope, index)
        if returned is None:
            return None
        for value, stmt in returned:
            if flow.carries_graph(value, stmt, depth + 1):
                return True
            if stmt.no_grad and not _passed_through(value, params, stmt):
                continue  # computed under no_grad (`@torch.no_grad()` on the helper): no graph
            read |= {p for p in params - read if _reads_outside_detach(value, {p}, flow, stmt)}
        if read:  # `return 1.0 / (levels[1:] - levels[:-1])`: as graph-carrying as the arguments it reads
            values = _bound_to(call, callee.scope.params, read)
            return any(self.carries_graph(v.value if isinstance(v, ast.Starred) else v, at, depth + 1) for v in values)
        return False


def _sites_running(flow: DataFlow, function: Scope, runs: Callable[[Callee], bool]) -> list[CallSite]:
    """The call sites of the flow's module that name `function` and resolve to a callee `runs` accepts."""
    called = function.name == "__call__"  # `scaler(loss, ...)` on an instance runs it
    return [
        site for scope in flow.collected.scopes for site in scope.calls
        if (last_part(dotted(site.call.func)) == function.name or called and _instance_call(site.call, flow))
        and (callee := flow.resolver.resolve(site.call, scope)) is not None and runs(callee)
    ]


def _instance_call(call: ast.Call, flow: DataFlow) -> bool:
    """`scaler(...)`, `self.loss_scaler(...)`: a call of a name that is no function or class of the
    module, nor an import, which may be an object's `__call__`."""
    name = dotted(call.func)
    if name is None or name.split(".", 1)[0] in flow.collected.imports or name in flow.collected.classes:
        return False
    return not (isinstance(call.func, ast.Name) and (name in flow.resolver.module.top_functions or name in BUILTIN_NAMES))


def _runs(callee: Callee, path: Path, function: Scope) -> bool:
    """The call runs `function` of the module at `path` (another reading of that module has its
    own scope objects: the function is known by its place)."""
    if callee.module.path is None or callee.module.index is None:
        return False
    node, other = callee.scope.node, function.node
    return (
        callee.module.index.resolved(callee.module.path) == path and callee.scope.name == function.name
        and getattr(node, "lineno", None) == getattr(other, "lineno", None)
    )


def _passed_through(value: ast.expr, params: set[str], stmt: Stmt) -> bool:
    """`return x` of the parameter `x` as it came in: no_grad around the return leaves its graph.
    A parameter reassigned first (`p = p * 0.9 + q.mean() * 0.1` under no_grad) is a new value."""
    if not isinstance(value, ast.Name) or value.id not in params:
        return False
    base, _ = reaching(value.id, stmt.scope, stmt.order, stmt)
    return base is None or base.kind == "param"


def _returned_graph(flow: DataFlow, value: ast.expr, stmt: Stmt, depth: int) -> bool:
    """A value project code returns (a forward's field, slot or tail) is shown to hold a graph
    there: outside `no_grad`, not handed back by layers it walks (out of sight), and carrying one."""
    return not stmt.no_grad and not _from_walked_layers(value, stmt.scope) and flow.carries_graph(value, stmt, depth + 1)


def _from_walked_layers(value: ast.expr, scope: Scope, depth: int = 0) -> bool:
    """A forward's value that comes from calls of a loop's own target (`for layer in self.layers:
    outs = layer(x, memory)`, then `memory = outs[-2]`): each layer may detach what it hands back
    (memory transformers do), so whether it holds a graph is out of sight."""
    while isinstance(value, (ast.Subscript, ast.Attribute, ast.Starred)):
        value = value.value
    if depth > 3 or not isinstance(value, ast.Name):
        return False
    targets = scope.loop_targets()
    for definition in scope.definitions(value.id):
        made = definition.value
        while isinstance(made, (ast.Subscript, ast.Attribute)):
            made = made.value
        if definition.kind not in {"assign", "unpack"} or made is None:
            continue
        if isinstance(made, ast.Call) and dotted(made.func) in targets:
            return True
        if isinstance(made, ast.Name) and _from_walked_layers(made, scope, depth + 1):
            return True
    return False


def returned_elements(function: Scope, index: Sequence[int]) -> Optional[list[tuple[ast.expr, Stmt]]]:
    """What the function returns at `index` of its returned tuples (`return loss, mask, p` read
    at (2,)), with each return's statement; None when a return may hold a tuple whose element the
    code does not show (`return outputs`). A return that cannot be such a tuple (`return
    F.mse_loss(a, b)` on another branch) is left out when some return is one: the caller that
    unpacks the result expects the tuple."""
    found: list[tuple[ast.expr, Stmt]] = []
    opaque = False
    for value, stmt in function.returns:
        element: Optional[ast.expr] = value
        for position in index:
            if not isinstance(element, ast.Tuple) or position >= len(element.elts):
                opaque = opaque or not isinstance(element, (ast.Tuple, ast.Call, ast.BinOp, ast.Constant, ast.Compare))
                element = None
                break
            element = element.elts[position]
        if element is not None:
            found.append((element, stmt))
    if opaque or (index and not found):
        return None
    return found


def _writes_slot(node: ast.AST, holder: str, key: object) -> bool:
    """The statement writes `holder[key]`: assigns it, updates it in place, or calls an in-place
    method on it (`out["loss"].div_(k)`)."""
    def is_slot(target: ast.expr) -> bool:
        return (isinstance(target, ast.Subscript) and dotted(target.value) == holder
                and isinstance(target.slice, ast.Constant) and target.slice.value == key)

    if isinstance(node, ast.Assign):
        return any(is_slot(target) for target in node.targets)
    if isinstance(node, ast.AugAssign):
        return is_slot(node.target)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        receiver, method = method_of(node.value)
        return receiver is not None and (method or "").endswith("_") and is_slot(receiver)
    return False


def _slot_name(expr: ast.Subscript | ast.Attribute) -> Optional[str]:
    """`out["loss"]` -> "loss", `out.loss` -> "loss"."""
    if isinstance(expr, ast.Attribute):
        return expr.attr
    key = expr.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _slot_value(built: ast.expr, slot: str) -> Optional[ast.expr]:
    """What a returned dict display (`{"loss": loss, ...}`) or output object (`Output(loss=loss)`)
    holds under `slot`; None when the return is built otherwise or may hold it twice."""
    if isinstance(built, ast.Dict):
        if any(key is None for key in built.keys):
            return None  # `{**extra, "loss": loss}`: `extra` may hold it too
        values = [v for k, v in zip(built.keys, built.values) if isinstance(k, ast.Constant) and k.value == slot]
    elif isinstance(built, ast.Call) and class_like(dotted(built.func)):
        values = [kw.value for kw in built.keywords if kw.arg == slot]
    else:
        return None
    return values[0] if len(values) == 1 else None


def _slice_start(key: ast.expr) -> Optional[int]:
    """The first position of an open-ended slice (`[1:]`, `[:]`); None for anything else."""
    if not isinstance(key, ast.Slice) or key.upper is not None or key.step is not None:
        return None
    if key.lower is None:
        return 0
    return key.lower.value if isinstance(key.lower, ast.Constant) and type(key.lower.value) is int and key.lower.value >= 0 else None


def _sequence_parts(value: ast.expr, top: bool = True) -> Optional[list[tuple[bool, ast.expr]]]:
    """A returned sequence as its parts, each an element or (True) a run of unknown length:
    `[loss] + mems` is an element and a run, `(loss, *mems)` the same. None when the value is not
    a sequence built in sight (`return outputs`)."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return [(True, e.value) if isinstance(e, ast.Starred) else (False, e) for e in value.elts]
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        left, right = _sequence_parts(value.left, False), _sequence_parts(value.right, False)
        return None if left is None or right is None else left + right
    if not top and isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return [(True, value)]
    return None


def returned_tail(function: Scope, start: int) -> Optional[list[tuple[ast.expr, Stmt]]]:
    """What the function's returned sequences hold from position `start` on (a run of unknown
    length counts wherever it begins); None when a return may be a sequence the code does not
    show. Returns that cannot be such a sequence (`return None`, a call) are left out."""
    found: list[tuple[ast.expr, Stmt]] = []
    for value, stmt in function.returns:
        parts = _sequence_parts(value)
        if parts is None:
            if not isinstance(value, (ast.Call, ast.Constant, ast.Compare)):
                return None
            continue
        position: Optional[int] = 0
        for is_run, part in parts:
            if position is None or position >= start or is_run:
                found.append((part, stmt))
            position = None if is_run or position is None else position + 1
    return found


def appended(name: str, base: Definition, at: Stmt) -> Iterator[tuple[ast.expr, Stmt]]:
    """What `name.append(v)` (or `insert`) adds to the list between its definition `base` and
    `at`, outside `no_grad`, on a branch that reaches `at`."""
    for site in at.scope.calls:
        receiver, method = method_of(site.call)
        if method not in {"append", "insert"} or receiver is None or dotted(receiver) != name or not site.call.args:
            continue
        if base.order < site.stmt.order < at.order and not site.stmt.no_grad and site.stmt.compatible(at):
            yield site.call.args[-1], site.stmt


def _slot_detached(scope: Scope, name: str, after: int) -> bool:
    """`output["loss"] = output["loss"].detach()` after the backward: the collection's graph-carrying
    slot is replaced by a graph-free value (whichever slot it is: the analysis stays silent)."""
    for stmt in scope.stmts:
        node = stmt.node
        if stmt.order <= after or not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Subscript) and dotted(target.value) == name and any(
            isinstance(n, ast.Call) and method_of(n)[1] in _NO_GRAPH_METHODS for n in ast.walk(node.value)
        ):
            return True
    return False


def _running_count(divisor: ast.expr, at: Stmt) -> Optional[ast.AST]:
    """The loop whose iterations `divisor` counts (`i`, `i + 1`, `(step + 1)` of `for i, b in
    enumerate(...)` or `for i in range(n)`; `n` with `n += 1` on every iteration), or None."""
    if isinstance(divisor, ast.BinOp) and isinstance(divisor.op, ast.Add):
        if is_number(divisor.right):
            divisor = divisor.left
        elif is_number(divisor.left):
            divisor = divisor.right
        else:
            return None
    if not isinstance(divisor, ast.Name):
        return None
    name = divisor.id
    for loop in at.loops:
        node = loop.node
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call):
            func = dotted(node.iter.func)
            target: Optional[ast.expr] = node.target
            if func == "enumerate" and isinstance(target, ast.Tuple) and target.elts:
                target = target.elts[0]
            elif func != "range":
                target = None
            if isinstance(target, ast.Name) and target.id == name and not _rebound_in(name, loop, at):
                return node
        counts = [
            d for d in at.scope.definitions(name)
            if d.kind == "aug" and d.op == "AddAssign" and is_number(d.value) and d.stmt.loop is loop
        ]
        if len(counts) == 1 and not any(isinstance(n, ast.If) for n, _ in counts[0].stmt.path if _after(n, loop.node, counts[0].stmt)):
            others = [
                d for d in at.scope.definitions(name)
                if d is not counts[0] and loop.contains(d.stmt) and not (d.kind == "assign" and is_number(d.value))
            ]  # a reset to 0 at the step still counts the micro-steps of the window
            if not others:
                return node
    return None


def _rebound_in(name: str, loop, at: Stmt) -> bool:
    """The loop's index bound anew inside the loop (it no longer counts iterations)."""
    return any(d.kind != "for" and loop.contains(d.stmt) for d in at.scope.definitions(name))


def _after(node: ast.AST, loop_node: ast.AST, stmt: Stmt) -> bool:
    """`node` sits inside `loop_node` on the path of `stmt` (an `if` within the loop, not around it)."""
    seen_loop = False
    for current, _ in stmt.path:
        if current is loop_node:
            seen_loop = True
        elif current is node:
            return seen_loop
    return False


_CONTAINER_TYPES = {"tuple", "list", "dict", "Tuple", "List", "Dict", "Sequence", "Mapping", "abc.Sequence", "abc.Mapping"}


def narrowed_to_container(name: Optional[str], at: Stmt) -> bool:
    """`at` runs only under `if isinstance(name, tuple):` (or list, dict) and `name` is not bound
    again inside that `if`: there it holds a container, whatever it holds elsewhere."""
    if name is None:
        return False
    for node, branch in at.path:
        if branch != "body" or not isinstance(node, ast.If) or not isinstance(node.test, ast.Call):
            continue
        test = node.test
        if dotted(test.func) != "isinstance" or len(test.args) != 2 or dotted(test.args[0]) != name:
            continue
        kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        if kinds and all((dotted(k) or "").removeprefix("typing.").removeprefix("collections.") in _CONTAINER_TYPES for k in kinds):
            base, _ = reaching(name, at.scope, at.order, at)
            return base is None or not base.stmt.within(node)
    return False


def _result_element(expr: ast.Subscript, at: Stmt, backward_roots: set[int]) -> Optional[Definition]:
    """`out[1]` where `out` is bound once to a call's result that is not itself handed to backward:
    read as the element an unpacking would bind (`_, n = call(...)`)."""
    key = expr.slice
    name = dotted(expr.value)
    if name is None or not isinstance(key, ast.Constant) or type(key.value) is not int or key.value < 1:
        return None
    base, updates = reaching(name, at.scope, at.order, at)
    if base is None or updates or base.kind != "assign" or not isinstance(base.value, ast.Call) or id(base) in backward_roots:
        return None
    return Definition(name, "unpack", base.value, base.stmt, index=(key.value,))


def _prefixes(name: str) -> list[str]:
    """`self.model.head` -> `self.model.head`, `self.model` (not `self`): the objects a call is made on."""
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) not in {"self", "cls"}]


def _passed_param(value: ast.expr, at: Stmt, ranks: frozenset[str], depth: int = 0) -> Optional[str]:
    """The parameter `value` is, up to copies and casts (`.clone()`, `.float()`) and division by
    the number of ranks (a process count, or a parameter in `ranks` that the call binds to one);
    None for anything else."""
    if depth > 6:
        return None
    if isinstance(value, ast.Call):
        receiver, method = method_of(value)
        if receiver is not None and method in _DIVIDING_NAMES and len(value.args) == 1 and _process_count(value.args[0], set(), ranks):
            return _passed_param(receiver, at, ranks, depth + 1)
        if receiver is None or method not in _PASS_THROUGH_METHODS - {"mean", "sum"} or value.args and method != "to":
            return None
        return _passed_param(receiver, at, ranks, depth + 1)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div) and _process_count(value.right, set(), ranks):
        return _passed_param(value.left, at, ranks, depth + 1)
    if not isinstance(value, ast.Name):
        return None
    base, updates = reaching(value.id, at.scope, at.order, at)
    if base is None or any(not _process_count(_update_divisor(u), set(), ranks) for u in updates):
        return None  # only a mean over ranks in place (`rt /= world_size`, `rt.div_(n)`)
    if base.kind == "param":
        return base.name if base.name not in {"self", "cls"} else None
    if base.kind != "assign" or base.value is None:
        return None
    return _passed_param(base.value, base.stmt, ranks, depth + 1)


def _update_divisor(update: Definition) -> Optional[ast.expr]:
    """What an in-place division divides by: `n` of `x /= n` or `x.div_(n)`; None for any other update."""
    if update.kind == "aug" and update.op == "DivideAssign":
        return update.value
    value = update.value
    if update.kind == "inplace" and update.op in _DIVIDING_NAMES and isinstance(value, ast.Call) and len(value.args) == 1:
        return value.args[0]
    return None


def _process_count(divisor: Optional[ast.expr], k_names: set[str], ranks: frozenset[str] = frozenset()) -> bool:
    """`world_size`, `args.world_size`, `dist.get_world_size()`, `accelerator.num_processes` (or a
    parameter the caller binds to one of them, in `ranks`): the number of ranks a distributed mean
    divides by, not a count of micro-steps."""
    if divisor is None or mentions(divisor, k_names):
        return False
    named = dotted(divisor.func) if isinstance(divisor, ast.Call) and not divisor.args else dotted(divisor)
    return named is not None and (named in ranks or last_part(named) in _PROCESS_COUNTS)


def _own_size(numerator: ast.expr, divisor: ast.expr, k_names: set[str]) -> bool:
    """The divisor is a size of a value the numerator is made from (`x.shape[0]`, `x.size(0)`,
    `len(x)`, `x.numel()` with `x` in the numerator): the quotient is that value's mean."""
    measured: Optional[ast.expr] = None
    if isinstance(divisor, ast.Subscript) and isinstance(divisor.value, ast.Attribute) and divisor.value.attr == "shape":
        measured = divisor.value.value
    elif isinstance(divisor, ast.Call):
        receiver, method = method_of(divisor)
        if receiver is not None and method in {"size", "numel"}:
            measured = receiver
        elif receiver is None and method == "len" and len(divisor.args) == 1:
            measured = divisor.args[0]
    name = dotted(measured) if measured is not None else None
    return name is not None and name not in k_names and mentions(numerator, {name})


def _ratio(numerator: ast.expr, divisor: ast.expr, at: Stmt, k_names: set[str]) -> bool:
    """Divisor and numerator are made from the same local values (`(c - u) / c`, `inter / union`
    with `union = a + b - inter`, `rho2 / c2` from one pair of boxes): a ratio of one micro-batch's
    own quantities, such as an IoU, and no division by a window size. Definitions are followed a
    few steps; an item read from a container (`batch["n"]`) does not count as shared, and nothing
    counts once k is read."""
    scope = at.scope
    # Loop targets are counters and items drawn, not quantities computed (`/ (t + 1)` beside `x[:, t]`).
    counted = scope.loop_targets()
    local = (set(scope.defs) | set(scope.params)) - counted - {"self", "cls"}
    if not local or mentions(divisor, k_names):
        return False
    divisor_reads = _made_from(divisor, at, local, k_names)
    return divisor_reads is not None and bool(divisor_reads & (_made_from(numerator, at, local, k_names) or set()))


_RATIO_DEPTH = 3


def _made_from(expr: ast.expr, at: Stmt, local: set[str], k_names: set[str]) -> Optional[set[str]]:
    """The local names a value is computed from, `_RATIO_DEPTH` definitions deep; None when k is read."""
    found = _bare_names(expr, local)
    frontier = set(found)
    for _ in range(_RATIO_DEPTH):
        reached: set[str] = set()
        for name in frontier:
            base, updates = reaching(name, at.scope, at.order, at)
            for definition in ([base] if base is not None else []) + updates:
                if definition.value is None or definition.kind not in {"assign", "aug", "unpack"}:
                    continue  # a loop target's recorded value is what it iterates, not what made it
                if mentions(definition.value, k_names):
                    return None
                reached |= _bare_names(definition.value, local)
        frontier = reached - found
        found |= reached
    return found


def _bare_names(expr: ast.expr, local: set[str]) -> set[str]:
    """Local names read as values (`x`, `x.sum()`, `x[:, 2]`), not as containers of an item
    (`batch["n"]`, `batch.n`)."""
    nodes = list(ast.walk(expr))
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    skipped = {
        id(n.value) for n in nodes
        if isinstance(n, ast.Subscript) and _keyed(n) or isinstance(n, ast.Attribute) and id(n) not in called
    }
    return {n.id for n in nodes if isinstance(n, ast.Name) and n.id in local and id(n) not in skipped}


def _keyed(subscript: ast.Subscript) -> bool:
    """`batch["n"]`: an item of a mapping, not a slice of a tensor."""
    return isinstance(subscript.slice, ast.Constant) and isinstance(subscript.slice.value, str)


_RECURRENT_HINTS = ("rnn", "lstm", "gru", "cell")
# What a model's own methods return: parameters, modes, state; no forward pass.
_MODEL_HOUSEKEEPING = torch_core.MODULE_ONLY_METHODS | {"to", "cuda", "cpu", "zero_grad", "requires_grad_"}


def iterated_element(iterable: ast.expr, index: tuple[int, ...]) -> Optional[ast.expr]:
    """What a loop target holds, as far as its graph goes: `v` of `for k, v in terms.items()` holds
    the dict's values (`k` a key), `x` of `for i, x in enumerate(xs)` an element of `xs`; None
    when it holds no graph-carrying part (keys, counters)."""
    if isinstance(iterable, ast.Call):
        receiver, method = method_of(iterable)
        if receiver is not None and method in {"items", "values"} and not iterable.args:
            if method == "items" and index[:1] != (1,):
                return None
            return receiver
        if receiver is None and method == "enumerate" and iterable.args:
            return iterable.args[0] if index[:1] == (1,) else None
        if receiver is None and method == "zip" and index[:1] and index[0] < len(iterable.args):
            return iterable.args[index[0]]
        if receiver is None and method in {"zip", "enumerate", "range"}:
            return None
    return iterable


def _index_part(expr: ast.Subscript) -> bool:
    """`x.max(1)[1]`, `torch.topk(x, k)[1]`: the indices of a (values, indices) result."""
    value = expr.value
    if not isinstance(value, ast.Call) or not (isinstance(expr.slice, ast.Constant) and expr.slice.value == 1):
        return False
    _, method = method_of(value)
    return method in _INDEX_RETURNING


_GRADIENT_WORDS = frozenset({"grad", "grads", "gradient", "gradients"})


def _gradient_getter(call: ast.Call) -> bool:
    """`net.get_grads()`, `model.flat_grad()`: a model method named for the gradients it hands
    back (the parameters' `.grad`, no graph) and given no input, not a forward (`grad_penalty` is
    named for a loss; `model.input_grad(x)` takes a batch)."""
    method = method_of(call)[1]
    return method is not None and not call.args and method.lower().rsplit("_", 1)[-1] in _GRADIENT_WORDS


def read_outside_detach(expr: ast.expr) -> set[str]:
    """The names an expression reads other than through a detach, `.data` or a size."""
    found: set[str] = set()
    pending: list[ast.AST] = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Attribute) and node.attr in _NO_GRAPH_ATTRIBUTES:
            continue
        if isinstance(node, ast.Call) and method_of(node)[1] in _NO_GRAPH_METHODS:
            continue
        if isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) is not None:
            found.add(dotted(node) or "")
            if isinstance(node, ast.Attribute):
                pending.append(node.value)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _bound_to(call: ast.Call, params: list[str], wanted: set[str]) -> list[ast.expr]:
    """The arguments of a call bound to the parameters in `wanted` (all of them when a star hides
    the binding); `self` is bound by the call's receiver, not an argument."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return [*call.args, *(kw.value for kw in call.keywords)]
    positional = [p for p in params if p not in {"self", "cls"}] if params[:1] in (["self"], ["cls"]) else list(params)
    bound = [arg for name, arg in zip(positional, call.args) if name in wanted]
    return bound + [kw.value for kw in call.keywords if kw.arg in wanted]


def _reads_outside_detach(expr: ast.expr, params: set[str], flow: DataFlow, at: Stmt) -> bool:
    """A parameter read (directly or through local names, each followed to the definition that
    reaches its use) other than through a detach."""
    pending: list[tuple[ast.AST, Stmt]] = [(expr, at)]
    seen: set[int] = set()
    while pending:
        node, where = pending.pop()
        name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if isinstance(node, ast.Attribute) and (
            node.attr in _NO_GRAPH_ATTRIBUTES or set((name or "").split(".")[1:]) & _NO_GRAPH_ATTRIBUTES
        ):
            continue  # `x.data`, `x.data.clone`: read through `.data`
        if isinstance(node, ast.Call):
            _, method = method_of(node)
            if method in _NO_GRAPH_METHODS:
                continue
            if isinstance(node.func, ast.Name) and node.func.id in _NUMBER_CASTS and node.func.id not in flow.collected.imports:
                continue  # `float(mean_diff)`: a Python number
            if flow.canonical(dotted(node.func) or "") == "torch.autograd.grad" and not is_true(keyword(node, "create_graph")):
                continue  # gradients taken without create_graph carry no graph
        if name is not None:
            head = name.split(".", 1)[0]
            base, _ = reaching(name, where.scope, where.order, where)
            if head in params and (base is None or base.kind == "param"):
                return True
            if base is not None and base.value is not None and id(base) not in seen and base.kind in {"assign", "unpack"}:
                seen.add(id(base))  # `p = p * 0.9 + q.mean()` reads the `p` before it, from its own line
                pending.append((base.value, base.stmt))
            elif head in params:
                return True
            if isinstance(node, ast.Attribute):
                pending.append((node.value, where))
            continue
        pending.extend((child, where) for child in ast.iter_child_nodes(node))
    return False
