"""What a value is, by what the code shows: a tensor, a number (or any other value that is no
tensor: a string, a numpy value, an option read from argparse, a tuple of gradients), or unknown.

Fixes that call a tensor method on a value (`.detach()`) read it: safe on a tensor, never offered on
a number, where the method would raise at run time. Every answer rests on evidence in the code; a
name alone only counts when nothing else is in sight (`lr`, `batch_size`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable, Optional

from accumlint.analysis.collect import Definition, Scope, Stmt
from accumlint.analysis.dataflow import appended, iterated_element, narrowed_to_container, reaching, returned_elements
from accumlint.analysis.exprs import dotted, last_part, method_of, names_in
from accumlint.analysis.libraries import NUMERIC_LIBRARIES
from accumlint.analysis.lifetimes import is_model

if TYPE_CHECKING:
    from accumlint.analysis.dataflow import DataFlow

TENSOR = "tensor"
NUMBER = "number"
CONTAINER = "container"  # a list, tuple, dict or set: no tensor itself, but it may hold graph-carrying ones
TENSORS = "tensors"  # a tuple of tensors (`torch.autograd.grad(...)`, `x.split(n)`): its elements are tensors
UNKNOWN = "unknown"

# Methods of a tensor whose result is a tensor again.
_TENSOR_METHODS = {
    "mean", "sum", "float", "half", "double", "bfloat16", "to", "cuda", "cpu", "squeeze", "unsqueeze", "view",
    "reshape", "contiguous", "clone", "abs", "pow", "sqrt", "exp", "log", "neg", "norm", "flatten", "type_as",
    "mul", "div", "add", "sub", "prod", "square", "clamp", "repeat", "expand", "transpose", "permute",
    "detach", "round", "sigmoid", "softmax", "log_softmax", "tanh", "relu",
}
# Methods that give a plain number or a host value (`decode`, `batch_decode`: token ids to text).
_NUMBER_METHODS = {"item", "tolist", "numpy", "size", "dim", "numel", "nelement", "element_size", "__len__", "get_lr", "get_last_lr",
                   "decode", "batch_decode"}
_NUMBER_BUILTINS = {"float", "int", "len", "round", "bool", "str", "repr", "format", "hash", "id", "ord", "divmod", "isinstance"}
_CHOOSING_BUILTINS = {"max", "min", "abs", "pow"}  # the kind of what they are given
_NUMERIC_MODULES = NUMERIC_LIBRARIES
# torch functions that return tensors: anything under torch except these host-side namespaces.
_TORCH_HOST = ("cuda", "distributed", "backends", "utils", "cpu", "mps", "version", "hub", "jit", "onnx",
               "get_", "is_", "set_", "manual_seed", "initial_seed", "numel", "typename", "autograd")
_TUPLE_FUNCTIONS = {"max", "min", "topk", "sort", "split", "chunk", "unbind", "kthvalue", "mode", "median", "lstsq",
                    "broadcast_tensors", "meshgrid", "unique_consecutive", "tensor_split"}
# Names that, with nothing else in sight, say the value is a number.
_NUMBER_NAMES = {
    "lr", "learning_rate", "batch_size", "bsz", "epoch", "epochs", "global_step", "seq_len", "seq_length",
    "temp", "temperature", "momentum", "weight_decay", "num_samples", "n_samples", "num_examples", "step",
    "iteration", "world_size", "rank", "local_rank",
}
_OPTION_HOLDERS = {"args", "opt", "opts", "cfg", "config", "hparams", "flags", "FLAGS"}
_ANNOTATED_NUMBERS = {"int", "float", "bool", "str", "complex"}
_ANNOTATED_TENSORS = {"Tensor", "torch.Tensor", "FloatTensor", "LongTensor", "torch.FloatTensor", "Parameter", "nn.Parameter"}


# Project functions followed through their returns (`get_f1` returning what `get_precision` and
# `get_recall` return): each hop reads its returns with a fresh expression depth.
_MAX_CALL_HOPS = 4


def combined(kinds: Iterable[str]) -> str:
    """One kind for values that may each reach a point: their common kind, else unknown."""
    found = set(kinds)
    return found.pop() if len(found) == 1 else UNKNOWN


class ValueKinds:
    """The kind of a value at a statement, following local definitions, `self` attributes set in
    the class, parameters' annotations and defaults, and the returns of the project's functions."""

    def __init__(self, flow: "DataFlow", backwarded: Iterable[str] = (), hops: int = 0) -> None:
        self.flow = flow
        self.backwarded = set(backwarded)
        self.hops = hops  # project calls followed to get here: each callee's returns get a fresh depth

    def of(self, expr: ast.expr, at: Stmt, depth: int = 0) -> str:
        if depth > 10:
            return UNKNOWN
        if isinstance(expr, ast.Constant):
            return NUMBER if expr.value is not None and expr.value is not Ellipsis else UNKNOWN
        if isinstance(expr, (ast.JoinedStr, ast.Lambda)):
            return NUMBER  # no tensor: a string or a function
        if isinstance(expr, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return CONTAINER
        if isinstance(expr, ast.NamedExpr):
            return self.of(expr.value, at, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return NUMBER if isinstance(expr.op, ast.Not) else self.of(expr.operand, at, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self._binary(expr, at, depth)
        if isinstance(expr, ast.IfExp):
            return combined([self.of(expr.body, at, depth + 1), self.of(expr.orelse, at, depth + 1)])
        if isinstance(expr, ast.Call):
            return self._call(expr, at, depth)
        if isinstance(expr, ast.Subscript):
            return self._subscript(expr, at, depth)
        name = dotted(expr)
        if name is not None:
            return self._name(name, expr, at, depth)
        if isinstance(expr, ast.Attribute):  # `model(x).logits`, `f(x).shape`
            if expr.attr == "shape":
                return NUMBER
            return TENSOR if expr.attr in {"data", "grad", "T"} and self.of(expr.value, at, depth + 1) == TENSOR else UNKNOWN
        return UNKNOWN

    # --- operators -------------------------------------------------------------------------
    def _binary(self, expr: ast.BinOp, at: Stmt, depth: int) -> str:
        sides = [self.of(expr.left, at, depth + 1), self.of(expr.right, at, depth + 1)]
        if isinstance(expr.left, ast.JoinedStr) or (isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str)):
            return NUMBER  # string formatting
        if CONTAINER in sides or isinstance(expr.left, (ast.List, ast.Tuple)) or isinstance(expr.right, (ast.List, ast.Tuple)):
            return CONTAINER  # list concatenation
        if TENSOR in sides:
            return TENSOR  # a tensor with a number or a tensor is a tensor
        return NUMBER if sides == [NUMBER, NUMBER] else UNKNOWN

    def _subscript(self, expr: ast.Subscript, at: Stmt, depth: int) -> str:
        key = expr.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in _NUMBER_NAMES:
            return NUMBER  # `optimizer.param_groups[0]["lr"]`
        value = expr.value
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            return NUMBER
        if isinstance(value, ast.Call):
            receiver, method = method_of(value)
            full = dotted(value.func) or ""
            if method in {"size", "tolist"}:
                return NUMBER
            if full.endswith("autograd.grad"):
                return TENSOR  # one gradient of the tuple `torch.autograd.grad` returns
            if method in _TUPLE_FUNCTIONS and receiver is not None and self.of(receiver, at, depth + 1) == TENSOR:
                return TENSOR  # `x.max(1)[0]`: values or indices, both tensors
        inner = self.of(value, at, depth + 1)
        return TENSOR if inner in {TENSOR, TENSORS} else UNKNOWN  # indexing a tensor (or a tuple of them)

    # --- names -----------------------------------------------------------------------------
    def _name(self, name: str, expr: ast.expr, at: Stmt, depth: int) -> str:
        if narrowed_to_container(name, at):
            return CONTAINER  # under `if isinstance(loss, tuple):`
        if name in self.backwarded and self._handed_to_backward(name, at):
            # What backward takes is a tensor, unless the code shows a container: a Lightning
            # `training_step` may return `{"loss": loss, ...}`, whose "loss" the trainer backwards.
            return CONTAINER if self._definitions_kind(name, at, depth) == CONTAINER else TENSOR
        head, _, rest = name.partition(".")
        last = last_part(name)
        if isinstance(expr, ast.Attribute):
            if expr.attr == "shape":
                return NUMBER
            if expr.attr == "loss" and head not in {"self", "cls"}:
                return TENSOR  # `outputs.loss` of a model output
            if expr.attr in {"data", "grad"}:
                return TENSOR if self.of(expr.value, at, depth + 1) == TENSOR else UNKNOWN
        found = self._definitions_kind(name, at, depth)
        if found != UNKNOWN:
            return found
        if rest and (head in _OPTION_HOLDERS or last_part(dotted(expr.value) if isinstance(expr, ast.Attribute) else "") in _OPTION_HOLDERS):
            return NUMBER  # `args.temp`, `self.config.lr`: a run option, never a tensor
        if rest and self._parsed_options(head, at):
            return NUMBER
        if last in _NUMBER_NAMES and not self._model_output(name, at):
            return NUMBER  # `lr`, `batch_size` where nothing in sight says otherwise
        return UNKNOWN

    def iterates_a_tensor(self, expr: ast.expr, at: Stmt) -> bool:
        """`value` of `for name, value in terms.items()` where `terms` (a display in sight, or the
        displays a project function returns) holds a proven tensor: some iteration binds it."""
        for name in names_in(expr):
            base, _ = reaching(name, at.scope, at.order, at)
            if base is None or base.kind != "for" or base.value is None:
                continue
            element = iterated_element(base.value, base.index)
            if element is not None and TENSOR in self._collection_elements(element, base.stmt):
                return True
        return False

    def _collection_elements(self, expr: ast.expr, at: Stmt, depth: int = 0) -> set[str]:
        """The kinds of what a collection holds: a display in sight, followed through names, an
        unpacked element of a call and the returns of project functions."""
        if depth > 6:
            return set()
        if isinstance(expr, ast.Dict):
            return {self.of(v, at, 2) for v in expr.values}
        if isinstance(expr, (ast.List, ast.Tuple)):
            return {self.of(e, at, 2) for e in expr.elts}
        if isinstance(expr, ast.Call):
            return self._returned_elements(expr, at, None, depth)
        name = dotted(expr)
        if name is None:
            return set()
        base, updates = reaching(name, at.scope, at.order, at)
        if base is None or updates or base.value is None:
            return set()
        if base.kind == "assign":
            held = self._collection_elements(base.value, base.stmt, depth + 1)
            if isinstance(base.value, ast.List):  # `outs = []`, then `outs.append(loss)`
                held |= {self.of(value, stmt, 2) for value, stmt in appended(name, base, at)}
            return held
        if base.kind == "unpack" and isinstance(base.value, ast.Call) and len(base.index) == 1:
            return self._returned_elements(base.value, base.stmt, base.index[0], depth)
        return set()

    def _returned_elements(self, call: ast.Call, at: Stmt, index: Optional[int], depth: int) -> set[str]:
        callee = self._callee(call, at)
        returned = returned_elements(callee.scope, () if index is None else (index,)) if callee is not None else None
        if callee is None or returned is None:
            return set()
        if self.hops >= _MAX_CALL_HOPS:
            return set()
        kinds = ValueKinds(callee.module.flow, hops=self.hops + 1)
        found: set[str] = set()
        for value, stmt in returned:
            found |= kinds._collection_elements(value, stmt, depth + 1)
        return found

    def _callee(self, call: ast.Call, at: Stmt):
        """The project function or method the call runs (a Callee), or None."""
        return self.flow.resolver.resolve(call, at.scope) or self.flow.instance_method(call, at)

    def _handed_to_backward(self, name: str, at: Stmt) -> bool:
        """The definition of `name` that reaches `at` is the one a backward of this function takes
        (`loss` of `loss.backward()`), or the function's backward is elsewhere: not an earlier
        binding of the same name (`loss = model.forward_loss(b)` holding a tuple before `loss = loss[0]`)."""
        roots = self.flow.backward_roots(at.scope)
        if not roots:
            return True
        base, _ = reaching(name, at.scope, at.order, at)
        return base is None or id(base) in roots

    def _model_output(self, name: str, at: Stmt) -> bool:
        """`temp = model(x)`: a name bound to a model's output is no number, whatever it is called."""
        base, _ = reaching(name, at.scope, at.order, at)
        value = base.value if base is not None else None
        if not isinstance(value, ast.Call):
            return False
        receiver, method = method_of(value)
        callee = dotted(receiver) if method in {"forward", "__call__"} else dotted(value.func)
        return is_model(callee, set())

    def _parsed_options(self, head: str, at: Stmt) -> bool:
        """`args = parser.parse_args()`: its attributes are options."""
        for scope in at.scope.sight():
            for definition in scope.definitions(head):
                value = definition.value
                if isinstance(value, ast.Call) and last_part(dotted(value.func)) in {"parse_args", "parse_known_args", "parse"}:
                    return True
        return False

    def _definitions_kind(self, name: str, at: Stmt, depth: int) -> str:
        base, updates = reaching(name, at.scope, at.order, at)
        if base is not None:
            kinds = [self._definition(base, depth)]
            kinds += [self.of(u.value, u.stmt, depth + 1) for u in updates if u.kind == "aug" and u.value is not None]
            if TENSOR in kinds:
                return TENSOR  # `total = 0; total += loss`: a tensor from then on
            return combined(kinds)
        if name.startswith(("self.", "cls.")):
            # an attribute set elsewhere in the class: the kind all its assignments agree on
            definitions = [d for s in at.scope.class_scopes for d in s.definitions(name) if d.kind in {"assign", "aug"}]
            if definitions:
                return combined(self._definition(d, depth) for d in definitions)
            return UNKNOWN
        module = self.flow.collected.scopes[0]
        if at.scope is not module:
            outer: Optional[Scope] = at.scope.parent
            while outer is not None:
                found, _ = reaching(name, outer, 1 << 30)
                if found is not None:
                    return self._definition(found, depth)
                outer = outer.parent
        if self.flow.collected.imports.get(name.split(".", 1)[0], "").split(".", 1)[0] in _NUMERIC_MODULES:
            return NUMBER  # `math.pi`
        return UNKNOWN

    def _definition(self, definition: Definition, depth: int) -> str:
        value = definition.value
        if definition.kind == "param":
            return self._parameter(definition)
        if value is None:
            return UNKNOWN
        if definition.kind in {"assign", "aug"}:
            return self.of(value, definition.stmt, depth + 1)
        if definition.kind == "for":
            if isinstance(value, ast.Call) and dotted(value.func) == "range":
                return NUMBER
            if isinstance(value, ast.Call) and dotted(value.func) == "enumerate" and definition.index[:1] == (0,):
                return NUMBER
            return UNKNOWN
        if definition.kind == "unpack" and isinstance(value, ast.Call):
            receiver, method = method_of(value)
            if method in _TUPLE_FUNCTIONS and receiver is not None and self.of(receiver, definition.stmt, depth + 1) == TENSOR:
                return TENSOR
            if self.of(value, definition.stmt, depth + 1) == TENSORS:
                return TENSOR
            if definition.index and len(definition.index) == 1:
                return self._returned(value, definition.stmt, depth, definition.index[0])
        return UNKNOWN

    def _parameter(self, definition: Definition) -> str:
        node = definition.stmt.scope.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return UNKNOWN
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        defaults: dict[str, ast.expr] = {}
        for arg, given in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            defaults[arg.arg] = given
        for arg, keyword_default in zip(args.kwonlyargs, args.kw_defaults):
            if keyword_default is not None:
                defaults[arg.arg] = keyword_default
        for arg in (*positional, *args.kwonlyargs):
            if arg.arg != definition.name:
                continue
            annotation = _annotation_name(arg.annotation)
            if annotation in _ANNOTATED_NUMBERS:
                return NUMBER
            if annotation in _ANNOTATED_TENSORS:
                return TENSOR
            default = defaults.get(arg.arg)
            if arg.annotation is None and isinstance(default, ast.Constant) and type(default.value) in (int, float):
                return NUMBER
        return UNKNOWN

    # --- calls ------------------------------------------------------------------------------
    def _call(self, call: ast.Call, at: Stmt, depth: int) -> str:
        receiver, method = method_of(call)
        full = dotted(call.func) or ""
        imports = self.flow.collected.imports
        origin = imports.get(full.split(".", 1)[0], "") if full else ""
        if method in _NUMBER_METHODS and receiver is not None:
            return NUMBER
        if receiver is None and method in _NUMBER_BUILTINS and method not in imports:
            return NUMBER
        if receiver is None and method in _CHOOSING_BUILTINS and method not in imports:
            args = [a for a in call.args if not isinstance(a, ast.Starred)]
            if len(args) < 2 and method in {"max", "min"}:
                return UNKNOWN  # `max(values)`: what the iterable holds
            return combined(self.of(a, at, depth + 1) for a in args)
        if receiver is None and method == "sum" and "sum" not in imports and call.args:
            first = call.args[0]
            if isinstance(first, (ast.GeneratorExp, ast.ListComp)):
                return self.of(first.elt, at, depth + 1) if self.of(first.elt, at, depth + 1) == NUMBER else UNKNOWN
            held = self._collection_elements(first, at)
            return held.pop() if len(held) == 1 and held <= {TENSOR, NUMBER} else UNKNOWN  # `sum(losses)`
        if full and origin.split(".", 1)[0] in _NUMERIC_MODULES:
            return NUMBER  # `math.exp(x)`, `np.mean(x)`, `time.time()`
        canonical = self.flow.canonical(full)
        if canonical.startswith("torch."):
            inside = canonical[len("torch."):]
            if inside == "autograd.grad":
                return TENSORS  # a tuple of gradients
            if inside.startswith(_TORCH_HOST) or last_part(full) in _TUPLE_FUNCTIONS:
                return UNKNOWN
            return TENSOR
        if receiver is not None and method in _TENSOR_METHODS and self.flow.instance_method(call, at) is not None:
            return self._returned(call, at, depth)  # `meter.mean()` of a project class: what it returns
        if receiver is not None and method in {"split", "chunk", "unbind", "tensor_split"}:
            return TENSORS if self.of(receiver, at, depth + 1) == TENSOR else UNKNOWN
        if receiver is not None and method in _TENSOR_METHODS:
            inner = self.of(receiver, at, depth + 1)
            if inner == NUMBER:
                return NUMBER if method in {"mean", "sum", "round", "prod", "reshape", "squeeze", "flatten"} else UNKNOWN
            return TENSOR
        if last_part(full).endswith("Tensor") or last_part(full) in {"Variable", "Parameter"}:
            return TENSOR
        if isinstance(call.func, ast.Name) and self._torch_loss_object(call.func.id, at):
            return TENSOR  # `mse(pred, y)` with `mse = nn.MSELoss()`
        returned = self._returned(call, at, depth)
        if returned != UNKNOWN:
            return returned
        return self._callable_returns(call.func, at)

    def _torch_loss_object(self, name: str, at: Stmt) -> bool:
        """`name` holds an instance of one of torch's loss modules (`nn.MSELoss()`), whose call gives
        a tensor."""
        base, updates = reaching(name, at.scope, at.order, at)
        if base is None or updates or base.kind != "assign" or not isinstance(base.value, ast.Call):
            return False
        built = self.flow.canonical(dotted(base.value.func) or "")
        return built.startswith("torch.nn.") and last_part(built).endswith("Loss")

    def _returned(self, call: ast.Call, at: Stmt, depth: int, index: Optional[int] = None) -> str:
        """What a function of the project returns (all its returns agree), or its return annotation."""
        if self.hops >= _MAX_CALL_HOPS:
            return UNKNOWN
        callee = self._callee(call, at)
        if callee is None:
            return UNKNOWN
        node = callee.scope.node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotation = _annotation_name(_element_annotation(node.returns, index))
            if annotation in _ANNOTATED_NUMBERS:
                return NUMBER
            if annotation in _ANNOTATED_TENSORS:
                return TENSOR
        # Each function's returns are read once per hop count: helpers calling helpers stay linear.
        memo: dict[tuple[int, Optional[int], int], str] = callee.module.flow.__dict__.setdefault("_return_kinds_memo", {})
        key = (id(callee.scope), index, self.hops)
        if key not in memo:
            returned = returned_elements(callee.scope, () if index is None else (index,))
            kinds = ValueKinds(callee.module.flow, hops=self.hops + 1)
            memo[key] = combined(kinds.of(value, stmt) for value, stmt in returned) if returned else UNKNOWN
        return memo[key]

    def _callable_returns(self, func: ast.expr, at: Stmt) -> str:
        """`self.length_fn(batch)` where `length_fn: Callable[[Any], int]` was handed to `__init__`."""
        name = dotted(func)
        if name is None:
            return UNKNOWN
        candidates: list[Definition] = []
        for scope in at.scope.sight():
            candidates.extend(scope.definitions(name))
        for definition in candidates:
            if definition.kind == "param":
                annotation = _parameter_annotation(definition)
            elif definition.kind == "assign" and isinstance(definition.value, ast.Name):
                params = [d for d in definition.stmt.scope.definitions(definition.value.id) if d.kind == "param"]
                annotation = _parameter_annotation(params[0]) if params else None
            else:
                continue
            returned = _callable_result(annotation)
            if returned in _ANNOTATED_NUMBERS:
                return NUMBER
            if returned in _ANNOTATED_TENSORS:
                return TENSOR
        return UNKNOWN


def _annotation_name(annotation: Optional[ast.expr]) -> Optional[str]:
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    return dotted(annotation)


def _element_annotation(annotation: Optional[ast.expr], index: Optional[int]) -> Optional[ast.expr]:
    """The annotation of element `index` of a `Tuple[Tensor, Dict[str, Tensor]]` (the whole one
    when index is None; None when it does not say)."""
    if index is None:
        return annotation
    if isinstance(annotation, ast.Subscript) and last_part(dotted(annotation.value)).lower() == "tuple":
        elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if index < len(elements) and not (isinstance(elements[-1], ast.Constant) and elements[-1].value is Ellipsis):
            return elements[index]
    return None


def _parameter_annotation(definition: Definition) -> Optional[ast.expr]:
    node = definition.stmt.scope.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    args = node.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if arg.arg == definition.name:
            return arg.annotation
    return None


def _callable_result(annotation: Optional[ast.expr]) -> Optional[str]:
    """`Callable[[Any], int]` -> "int"."""
    if not isinstance(annotation, ast.Subscript) or last_part(dotted(annotation.value)) != "Callable":
        return None
    key = annotation.slice
    if isinstance(key, ast.Tuple) and len(key.elts) == 2:
        return _annotation_name(key.elts[1])
    return None


def number_state(flow: "DataFlow", scope: Scope, name: str, loop_start: int) -> bool:
    """State carried across the iterations of a loop that the code shows to be a number: every
    assignment inside the loop gives a number (`temp = max(temp * 0.99, t_min)`), or none gives a
    tensor and it starts as a number other than a bare `0` (`p = args.p if args.p > 0 else 0.0`)."""
    kinds = ValueKinds(flow)
    assigned = [d for d in scope.definitions(name) if d.kind in {"assign", "aug"} and d.value is not None]
    inside = [kinds.of(d.value, d.stmt) for d in assigned if d.order >= loop_start and d.value is not None]
    if TENSOR in inside:
        return False
    if inside and all(kind == NUMBER for kind in inside):
        return True
    before = [d for d in assigned if d.order < loop_start]
    if not before or before[-1].value is None:
        return False
    start = before[-1].value
    if isinstance(start, ast.Constant) and type(start.value) is int and start.value == 0:
        return False  # `h = 0` may start a recurrent state that becomes a tensor
    return kinds.of(start, before[-1].stmt) == NUMBER
