"""Small, pure helpers over LibCST expressions."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

import libcst as cst


def dotted(expr: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a chain of names and attributes; None for anything else."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def method_of(call: cst.Call) -> tuple[Optional[cst.BaseExpression], Optional[str]]:
    """(receiver, method) for `receiver.method(...)`, else (None, name or None)."""
    if isinstance(call.func, cst.Attribute):
        return call.func.value, call.func.attr.value
    if isinstance(call.func, cst.Name):
        return None, call.func.value
    return None, None


def positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    count = 0
    for arg in call.args:
        if arg.keyword is None and arg.star == "":
            if count == index:
                return arg.value
            count += 1
    return None


def keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def int_value(expr: Optional[cst.BaseExpression]) -> Optional[int]:
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value.replace("_", ""), 0)
        except ValueError:
            return None
    return None


def is_true(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name not in _NON_CHILD_FIELDS)
        _CHILD_FIELDS[cls] = names
    return names


# Whitespace and punctuation never hold names or calls; skipping them keeps the walk cheap.
_NON_CHILD_FIELDS = frozenset({
    "lpar", "rpar", "whitespace_before", "whitespace_after", "whitespace_after_func",
    "whitespace_before_args", "whitespace_after_star", "whitespace_after_arg", "comma", "dot",
    "equal", "semicolon", "leading_lines", "trailing_whitespace", "header", "footer", "indent",
    "operator", "colon", "lbracket", "rbracket", "lbrace", "rbrace",
})


def walk(node: cst.CSTNode, skip_scopes: bool = True) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself included), not entering nested functions or lambdas.

    Reads the dataclass fields directly: LibCST's `children` property re-visits the node and
    costs far more than the walk itself."""
    stack = [node]
    scopes = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
    while stack:
        current = stack.pop()
        yield current
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                if not (skip_scopes and isinstance(value, scopes)):
                    stack.append(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, cst.CSTNode) and not (skip_scopes and isinstance(item, scopes)):
                        stack.append(item)


_NAMES: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}


def forget_names() -> None:
    """Drop the memo of names_in (called once per analysed module)."""
    _NAMES.clear()


def names_in(expr: cst.CSTNode) -> frozenset[str]:
    """Dotted names read in an expression: `a.b.c(x)` gives `a.b.c`, `a.b`, `a` and `x`."""
    memo = _NAMES.get(id(expr))
    if memo is not None and memo[0] is expr:
        return memo[1]
    found: set[str] = set()
    for current in walk(expr):
        if isinstance(current, (cst.Name, cst.Attribute)):
            name = dotted(current)
            if name is not None:
                found.add(name)
    result = frozenset(found)
    _NAMES[id(expr)] = (expr, result)  # the node is kept alive, so its id cannot be reused
    return result


def data_names_in(expr: cst.CSTNode) -> frozenset[str]:
    """Like names_in, but leaves out what is called: in `model(x)` the graph flows from `x`,
    not from the module object `model`."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [expr]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Name, cst.Attribute)):
            name = dotted(current)
            if name is not None:
                found.add(name)
                continue
        if isinstance(current, cst.Call):
            if isinstance(current.func, cst.Attribute):
                stack.append(current.func.value)  # a method's receiver is data: `out.mean()`
            elif not isinstance(current.func, cst.Name):
                stack.append(current.func)
            stack.extend(arg.value for arg in current.args)
            continue
        if isinstance(current, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(item for item in value if isinstance(item, cst.CSTNode))
    return frozenset(found)


def mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    return bool(names_in(expr) & names)


def needs_parens_as_operand(expr: cst.BaseExpression) -> bool:
    """Whether `expr` must be parenthesised to be the left operand of `/` or the receiver of `.x`."""
    if expr.lpar:
        return False
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)):
        return False
    if isinstance(expr, cst.BinaryOperation) and isinstance(
        expr.operator, (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply, cst.Power)
    ):
        return False
    return True


def parenthesize(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def divided(numerator: cst.BaseExpression, denominator: cst.BaseExpression) -> cst.BinaryOperation:
    """`numerator / denominator` with the parentheses precedence asks for."""
    left = parenthesize(numerator) if needs_parens_as_operand(numerator) else numerator
    right = denominator
    if not denominator.lpar and not isinstance(
        denominator, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)
    ):
        right = parenthesize(denominator)
    return cst.BinaryOperation(
        left=left,
        operator=cst.Divide(
            whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")
        ),
        right=right,
    )


def strip_parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.with_changes(lpar=[], rpar=[]) if expr.lpar else expr
