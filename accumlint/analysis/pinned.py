"""Where the code itself makes the accumulation steps 1: `if k == 1:` around a statement, or an
assertion outside any loop such as `assert args.fp16 or args.accum_steps == 1`, which pins k to 1
wherever its other side is false (`if not args.fp16:`). No accumulation happens on such a way."""

from __future__ import annotations

import ast
from typing import Optional

from accumlint.analysis.collect import Scope, Stmt
from accumlint.analysis.exprs import dotted, int_value, last_part

# `k <op> number` tests and, for each, the branch on which k is 1 (or less).
_K_IS_ONE_BRANCH: dict[tuple[type, Optional[int]], str] = {
    (ast.Eq, 1): "body", (ast.NotEq, 1): "orelse", (ast.Gt, 1): "orelse", (ast.GtE, 2): "orelse",
    (ast.LtE, 1): "body", (ast.Lt, 2): "body",
}

_COMPARE = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def k_is_one_on_way(stmt: Stmt, k: ast.expr, scope: Optional[Scope] = None) -> bool:
    """`stmt` runs only where the window size `k` is 1: under `if k == 1:` or the `else:` of
    `if k > 1:`, or (with `scope`) where an assertion in sight pins k to 1."""
    name = dotted(k)
    return name is not None and count_is_one_on_way(stmt, name, scope)


def count_is_one_on_way(stmt: Stmt, name: str, scope: Optional[Scope] = None) -> bool:
    """As `k_is_one_on_way`, for the accumulation count's dotted `name`."""
    ifs = [(node.test, branch) for node, branch in stmt.path if isinstance(node, ast.If)]
    for test, branch in ifs:
        one = _k_compared_to_one(test, name)
        if one is not None and one == branch:
            return True
    if scope is None or not ifs:
        return False
    return any(
        _same_count(pinned, name) and all(any(_refutes(test, branch, side) for test, branch in ifs) for side in others)
        for others, pinned in _assertions_in_sight(scope)
    )


def _k_compared_to_one(test: ast.expr, name: str) -> Optional[str]:
    """The branch of `test` on which `name` is 1, when `test` compares `name` with a number."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or dotted(test.left) != name:
        return None
    return _K_IS_ONE_BRANCH.get((type(test.ops[0]), int_value(test.comparators[0])))


def _same_count(pinned: str, name: str) -> bool:
    """The asserted name is the loop's k: the same text, or the same `accum` attribute read through
    another alias of the settings (`params` in `__init__`, `self.params` copied to `params` later)."""
    if pinned == name:
        return True
    tail = last_part(name)
    return "." in pinned and "." in name and tail == last_part(pinned) and "accum" in tail.lower()


def _assertions_in_sight(scope: Scope) -> list[tuple[list[ast.expr], str]]:
    found: list[tuple[list[ast.expr], str]] = []
    for seen in scope.sight():
        found.extend(_own_assertions(seen))
    return found


def _own_assertions(scope: Scope) -> list[tuple[list[ast.expr], str]]:
    """`assert A or B or k == 1` outside any loop of `scope`: ([A, B], k)."""
    if scope._k_pins is None:
        scope._k_pins = []
        for stmt in scope.stmts:
            test = stmt.node.test if isinstance(stmt.node, ast.Assert) and not stmt.loops else None
            if not isinstance(test, ast.BoolOp) or not isinstance(test.op, ast.Or):
                continue
            for side in test.values:
                name = dotted(side.left) if isinstance(side, ast.Compare) else None
                if name is not None and _k_compared_to_one(side, name) == "body":
                    scope._k_pins.append(([v for v in test.values if v is not side], name))
                    break
    return scope._k_pins


def _refutes(test: ast.expr, branch: str, side: ast.expr) -> bool:
    """Taking `branch` of `if test:` makes `side` false: `if not args.fp16:` against `args.fp16`,
    `if params.amp == -1:` against `params.amp >= 0` (integer comparisons of one name)."""
    holds = branch == "body"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if isinstance(side, (ast.Name, ast.Attribute)):
        return dotted(side) is not None and dotted(test) == dotted(side) and not holds
    if not (isinstance(test, ast.Compare) and isinstance(side, ast.Compare)):
        return False
    if len(test.ops) != 1 or len(side.ops) != 1 or dotted(test.left) is None or dotted(test.left) != dotted(side.left):
        return False
    a, b = _integer(test.comparators[0]), _integer(side.comparators[0])
    test_op, side_op = _COMPARE.get(type(test.ops[0])), _COMPARE.get(type(side.ops[0]))
    if a is None or b is None or test_op is None or side_op is None:
        return False
    # Both are fixed outside [min - 1, max + 1]: checking those integers decides every integer.
    values = range(min(a, b) - 1, max(a, b) + 2)
    return not any(test_op(v, a) == holds and side_op(v, b) for v in values)


def _integer(expr: ast.expr) -> Optional[int]:
    """An integer literal, negative ones (`-1`, a common "off" setting) included."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        value = int_value(expr.operand)
        return None if value is None else -value
    return int_value(expr)


# `1 <op> k` read as `k <flipped op> 1`
_FLIPPED: dict[type, type] = {ast.Eq: ast.Eq, ast.NotEq: ast.NotEq, ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def pinned_by(stmt: Stmt) -> Optional[str]:
    """The name a plain assertion pins to 1 (`assert self.grad_accumulation_steps == 1, "..."`,
    `assert k <= 1`, `assert 1 == k`), or None. `assert 1 <= k` only rules out 0."""
    test = stmt.node.test if isinstance(stmt.node, ast.Assert) else None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    name = dotted(test.left)
    if name is not None:
        return name if _k_compared_to_one(test, name) == "body" else None
    name, flipped = dotted(test.comparators[0]), _FLIPPED.get(type(test.ops[0]))
    if name is None or flipped is None:
        return None
    mirrored = ast.Compare(left=test.comparators[0], ops=[flipped()], comparators=[test.left])
    return name if _k_compared_to_one(mirrored, name) == "body" else None


def asserted_one_before(scope: Scope, names: set[str], order: int) -> bool:
    """`assert k == 1` in the function itself, outside any loop or `if`, before `order`: whenever
    the code after it runs, the accumulation count is 1."""
    return any(
        stmt.order < order and not stmt.loops and pinned_by(stmt) in names
        and not any(isinstance(node, (ast.If, ast.Try)) for node, _ in stmt.path)
        for stmt in scope.stmts
    )
