"""Small, pure helpers over CPython `ast` expressions."""

from __future__ import annotations

import ast
import builtins
from typing import Iterator, Optional

# Python's own functions and types (`int`, `len`, `print`): no model, no project code
BUILTIN_NAMES = frozenset(dir(builtins))

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

# Methods of a torch module that hand back the module itself (`net.cuda()`, `net.to(device)`,
# `net.train()`): the same object under another expression.
MODULE_RETURNING_METHODS = frozenset({
    "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval", "requires_grad_", "to_empty",
})

# Methods that put their argument into the container they are called on (`history.append(x)`,
# `queue.put(x)`): what they are given lives as long as the container.
FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "put", "appendleft"})


def dotted(expr: Optional[ast.AST]) -> Optional[str]:
    """`a.b.c` for a chain of names and attributes; None for anything else."""
    # The analysis asks this millions of times on a large repository, mostly of plain names:
    # exact type tests (nothing subclasses ast nodes) and no list for a name alone.
    if type(expr) is ast.Name:
        return expr.id
    if type(expr) is not ast.Attribute:
        return None
    parts = []
    node: ast.AST = expr
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is ast.Name:
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def plus_constant(expr: ast.expr) -> tuple[ast.expr, int]:
    """`i + 1` -> (`i`, 1); anything else -> (itself, 0)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        added = int_value(expr.right)
        if added is not None:
            return expr.left, added
    return expr, 0


def last_part(name: Optional[str]) -> str:
    return (name or "").rsplit(".", 1)[-1]


def class_like(name: Optional[str]) -> bool:
    """`Meter`, `aug.AdaptiveAugment`: a name that reads as a class (its last part capitalised)."""
    return bool(name) and last_part(name)[:1].isupper()


def method_of(call: ast.Call) -> tuple[Optional[ast.expr], Optional[str]]:
    """(receiver, method) for `receiver.method(...)`, else (None, name or None)."""
    if isinstance(call.func, ast.Attribute):
        return call.func.value, call.func.attr
    if isinstance(call.func, ast.Name):
        return None, call.func.id
    return None, None


def ordered(compare: ast.AST) -> Optional[tuple[ast.expr, ast.expr]]:
    """`a >= b`, `a > b`, `b <= a`, `b < a`: (the larger side, the smaller side); None for
    anything but one ordering comparison."""
    if not isinstance(compare, ast.Compare) or len(compare.ops) != 1:
        return None
    left, op, right = compare.left, compare.ops[0], compare.comparators[0]
    if isinstance(op, (ast.GtE, ast.Gt)):
        return left, right
    if isinstance(op, (ast.LtE, ast.Lt)):
        return right, left
    return None


def positional(call: ast.Call, index: int) -> Optional[ast.expr]:
    count = 0
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            return None  # positions after a *args are unknown
        if count == index:
            return arg
        count += 1
    return None


def positionals(call: ast.Call) -> list[ast.expr]:
    return [a for a in call.args if not isinstance(a, ast.Starred)]


def keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def int_value(expr: Optional[ast.AST]) -> Optional[int]:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    return None


def literal_element(value: Optional[ast.expr], index: tuple[int, ...]) -> Optional[ast.expr]:
    """What a name unpacked at `index` from a literal tuple gets (`self.model, self.opt =
    DDP(model), SGD(...)`: `DDP(model)` at (0,)); None when the value is no such literal."""
    for position in index:
        if not isinstance(value, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in value.elts):
            return None
        if position >= len(value.elts):
            return None
        value = value.elts[position]
    return value if index else None


def is_constant(expr: Optional[ast.AST], value: object) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is value


def is_true(expr: Optional[ast.AST]) -> bool:
    return is_constant(expr, True)


def is_number(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.Constant) and type(expr.value) in (int, float)


def is_string(expr: Optional[ast.AST]) -> bool:
    return isinstance(expr, ast.JoinedStr) or (isinstance(expr, ast.Constant) and isinstance(expr.value, str))


def walk(node: ast.AST, skip_scopes: bool = True) -> Iterator[ast.AST]:
    """Every node under `node` (itself included), not entering nested functions, lambdas or classes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not (skip_scopes and isinstance(child, _SCOPES)):
                stack.append(child)


_NAMES: dict[int, tuple[ast.AST, frozenset[str]]] = {}


def forget_names() -> None:
    """Drop the memo of names_in (called once per analysed module)."""
    _NAMES.clear()


def names_in(expr: ast.AST) -> frozenset[str]:
    """Dotted names read in an expression: `a.b.c(x)` gives `a.b.c`, `a.b`, `a` and `x`."""
    memo = _NAMES.get(id(expr))
    if memo is not None and memo[0] is expr:
        return memo[1]
    found: set[str] = set()
    for current in walk(expr):
        if isinstance(current, (ast.Name, ast.Attribute)):
            name = dotted(current)
            if name is not None:
                found.add(name)
    result = frozenset(found)
    _NAMES[id(expr)] = (expr, result)  # the node is kept alive, so its id cannot be reused
    return result


def data_names_in(expr: ast.AST) -> frozenset[str]:
    """Like names_in, but leaves out what is called: in `model(x)` the graph flows from `x`,
    not from the module object `model`; and what a conditional expression tests (`ref if
    multispeaker else None` is `ref` or nothing)."""
    found: set[str] = set()
    stack: list[ast.AST] = [expr]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.Name, ast.Attribute)):
            name = dotted(current)
            if name is not None:
                found.add(name)
                continue
        if isinstance(current, ast.Call):
            if isinstance(current.func, ast.Attribute):
                stack.append(current.func.value)  # a method's receiver is data: `out.mean()`
            elif not isinstance(current.func, ast.Name):
                stack.append(current.func)
            stack.extend(current.args)
            stack.extend(kw.value for kw in current.keywords)
            continue
        if isinstance(current, ast.IfExp):
            stack.extend((current.body, current.orelse))
            continue
        if isinstance(current, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(current))
    return frozenset(found)


def subscript_holder(target: ast.expr) -> Optional[str]:
    """`curve[step]`, `sums[name]`, `self.meters["loss"][i]`: the container a subscript store lands
    in (None for anything but a subscript of a name)."""
    if not isinstance(target, ast.Subscript):
        return None
    base: ast.expr = target
    while isinstance(base, ast.Subscript):
        base = base.value
    return dotted(base)


def keyed_name(node: ast.AST) -> Optional[str]:
    """`conf["gradient_accumulation_steps"]` -> that text: a config entry read by its string key,
    which a set of names may hold beside plain names (a k that lives in a dict)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        holder = dotted(node.value)
        if holder is not None:
            return f'{holder}["{node.slice.value}"]'
    return None


def mentions(expr: ast.AST, names: set[str]) -> bool:
    if names_in(expr) & names:
        return True
    if not any(name.endswith('"]') for name in names):
        return False
    return any(keyed_name(node) in names for node in walk(expr) if isinstance(node, ast.Subscript))


def call_name(call: ast.AST) -> str:
    """The dotted name of what is called, or "" (`torch.nn.LSTM(...)` -> `torch.nn.LSTM`)."""
    return dotted(call.func) or "" if isinstance(call, ast.Call) else ""


def name_equals(test: ast.expr) -> Optional[tuple[str, int]]:
    """`step == 0`, `0 == self.task_iteration`, `args.k == 1`: the name and the whole number it is
    compared equal to (either way round); None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    sides = (test.left, test.comparators[0])
    for name, number in (sides, sides[::-1]):
        named, value = dotted(name), int_value(number)
        if named is not None and value is not None:
            return named, value
    return None


def without_module_moves(value: ast.expr) -> ast.expr:
    """`net.cuda().train()` -> `net`: the module past the calls that hand it back unchanged."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MODULE_RETURNING_METHODS:
        value = value.func.value
    return value
