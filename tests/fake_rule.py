"""A stand-in rule for tests of the plumbing (cache, notebooks, byte preservation).

It reports `name.backward()` and fixes it to `(name / accum_steps).backward()`, like ACC001 does,
so these tests exercise fixing whatever state the real rules are in. It replaces the engine's
analysis and rule table for one test (monkeypatch), nothing else.
"""

from __future__ import annotations

import ast

from accumlint import engine
from accumlint.model import Fix, TextEdit, Violation

CODE = "ACC001"


def fake_check(facts):
    for node in ast.walk(facts.module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        if node.func.attr == "backward" and isinstance(receiver, ast.Name):
            start, end = facts.source.span(receiver)
            fix = Fix("divide the loss by accum_steps", "safe", (TextEdit(start, end, f"({receiver.id} / accum_steps)"),))
            yield Violation(CODE, "loss is not divided by accum_steps", node, fix)


def install(monkeypatch) -> None:
    monkeypatch.setattr(engine, "RULE_CHECKS", {CODE: fake_check})
