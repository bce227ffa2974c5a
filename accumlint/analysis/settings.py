"""Settings that `if` tests fix: two statements whose branches need opposite values of one
setting never run in the same pass (`if not args.deepspeed: loss /= k` and `if args.deepspeed:
engine.backward(loss)`; `if fp16 and native_amp: ... else: clip(...)` and, later, `elif fp16 and
native_amp: scaler.step(opt)`)."""

from __future__ import annotations

import ast

from accumlint.analysis.collect import Stmt
from accumlint.analysis.exprs import dotted, mentions

Setting = tuple[str, bool]  # (what the test reads, the value it has on the branch taken)

# Holders of many settings: `args.deepspeed` names the setting `deepspeed`, `args` alone none.
_SETTING_HOLDERS = ("args", "config", "cfg", "opt", "opts", "hparams")
_HOLDERS = {"self", "cls", *_SETTING_HOLDERS}


def read_from_settings(name: str) -> bool:
    """A value read from a holder of settings (`args.margin`, `self.cfg.loss.weight`,
    `self.training_args.clip_loss_value`): a number or a flag, no tensor."""
    return any(part.lower().endswith(_SETTING_HOLDERS) for part in name.split(".")[:-1])


def settings(test: ast.expr, holds: bool, ignored: frozenset[str] = frozenset()) -> set[Setting]:
    """What `test` fixes where it evaluates to `holds`: `if not args.deepspeed:` gives
    ("deepspeed", False) in its body; `if args.backend == "ddp":` gives ("backend=ddp", True).
    The whole test is a setting too, so the same test on opposite branches always contradicts.
    Tests that mention `ignored` names (the accumulation steps) fix nothing."""
    if mentions(test, set(ignored)):
        return set()
    found = {(ast.dump(test), holds)}
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return found | settings(test.operand, not holds, ignored)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if holds else ast.Or):
        return found.union(*(settings(value, holds, ignored) for value in test.values))
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant):
        constant, op = test.comparators[0].value, test.ops[0]
        if constant is None and isinstance(op, (ast.Is, ast.IsNot)):
            return found | settings(test.left, holds == isinstance(op, ast.IsNot), ignored)
        if isinstance(constant, str) and isinstance(op, (ast.Eq, ast.NotEq)):
            return found | {(f"{key}={constant}", holds == isinstance(op, ast.Eq)) for key in _named(test.left)}
        return found
    return found | {(key, holds) for key in _named(test)}


def _named(expr: ast.expr) -> set[str]:
    """The setting a name reads: the last part of `args.deepspeed`; none for `args` alone."""
    name = dotted(expr)
    if name is None:
        return set()
    last = name.rsplit(".", 1)[-1]
    return set() if last in _HOLDERS else {last}


def chosen(stmt: Stmt, ignored: frozenset[str] = frozenset()) -> set[Setting]:
    """The settings the `if`s around `stmt` fix on the branches that lead to it."""
    return set().union(*(
        settings(node.test, branch == "body", ignored) for node, branch in stmt.path if isinstance(node, ast.If)
    ))


def apart(a: Stmt, b: Stmt, ignored: frozenset[str] = frozenset()) -> bool:
    """`a` and `b` need opposite values of one setting: they never run in the same pass."""
    first = chosen(a, ignored)
    return bool(first) and bool({(key, not value) for key, value in first} & chosen(b, ignored))
