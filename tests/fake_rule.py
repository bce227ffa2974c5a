"""A stand-in rule for tests of the plumbing (cache, notebooks, byte preservation).

It reports `name.backward()` and fixes it to `(name / accum_steps).backward()`, like ACC001 does,
so these tests exercise fixing whatever state the real rules are in. It replaces the engine's
analysis and rule table for one test (monkeypatch), nothing else.
"""

from __future__ import annotations

import libcst as cst

from accumlint import engine
from accumlint.model import Fix, Violation

CODE = "ACC001"


class _Finder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[Violation] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward" and isinstance(func.value, cst.Name):
            scaled = cst.BinaryOperation(
                left=func.value,
                operator=cst.Divide(),
                right=cst.Name("accum_steps"),
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            )
            fix = Fix("divide the loss by accum_steps", "safe", {func: func.with_changes(value=scaled)})
            self.found.append(Violation(CODE, "loss is not divided by accum_steps", node, fix))


def fake_check(module: cst.Module):
    finder = _Finder()
    module.visit(finder)
    return finder.found


def install(monkeypatch) -> None:
    monkeypatch.setattr(engine, "analyse", lambda module: module)
    monkeypatch.setattr(engine, "RULE_CHECKS", {CODE: fake_check})
