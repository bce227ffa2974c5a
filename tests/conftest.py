"""Shared fixtures: a tiny fake rule set, so CLI behaviour is tested independently of the real rules."""

from __future__ import annotations

import ast

import pytest
from click.testing import CliRunner

from accumlint import rules
from accumlint.model import Fix, TextEdit, Violation


def _calls(facts, method):
    for node in ast.walk(facts.module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
            yield node


def fake_acc001(facts):
    """`name.backward()`: fake ACC001 with a safe fix that divides by accum_steps."""
    for call in _calls(facts, "backward"):
        receiver = call.func.value
        if isinstance(receiver, ast.Name) and not call.args and not call.keywords:
            start, end = facts.source.span(receiver)
            edit = TextEdit(start, end, f"({receiver.id} / accum_steps)")
            fix = Fix("Divide the loss by `accum_steps` at the backward call", "safe", (edit,))
            yield Violation("ACC001", "loss handed to backward is never divided by accum_steps", call, fix)


def fake_acc006(facts):
    """`X.backward(retain_graph=True)`: fake ACC006 with an unsafe fix that drops the argument."""
    for call in _calls(facts, "backward"):
        if [kw.arg for kw in call.keywords] == ["retain_graph"] and not call.args:
            start, end = facts.source.span(call.keywords[0])
            fix = Fix("Remove `retain_graph=True`", "unsafe", (TextEdit(start, end, ""),))
            yield Violation("ACC006", "backward(retain_graph=True) in a loop keeps graphs alive", call, fix)


def fake_acc009(facts):
    """`model.no_sync_missing()`: fake ACC009, report only."""
    for call in _calls(facts, "no_sync_missing"):
        yield Violation("ACC009", "model all-reduces on every micro-step", call)


FAKE_RULES = {"ACC001": fake_acc001, "ACC006": fake_acc006, "ACC009": fake_acc009}



@pytest.fixture
def fake_rules(monkeypatch):
    """Replace the real rules with the fakes above for one test (the engine holds the same dict)."""
    for code in list(rules.RULE_CHECKS):
        monkeypatch.delitem(rules.RULE_CHECKS, code)
    for code, check in FAKE_RULES.items():
        monkeypatch.setitem(rules.RULE_CHECKS, code, check)
    return FAKE_RULES


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project folder (with a .git so config lookup stops here) as the working directory."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def invoke(runner):
    """Run `accumlint ARGS...` in-process; returns click's Result (exit_code, stdout, stderr)."""
    from accumlint.cli import cli

    def run(*args: str):
        return runner.invoke(cli, list(args), catch_exceptions=False)

    return run
