"""Shared fixtures: a tiny fake rule set, so CLI behaviour is tested independently of the real rules."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
import pytest
from click.testing import CliRunner

from accumlint import rules
from accumlint.model import Fix, Violation

# `loss.backward()` on a bare name: fake ACC001 with a safe fix that divides by accum_steps.
_UNSCALED = m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("backward")), args=[])
# `X.backward(retain_graph=True)`: fake ACC006 with an unsafe fix that drops the argument.
_RETAIN = m.Call(
    func=m.Attribute(attr=m.Name("backward")),
    args=[m.Arg(keyword=m.Name("retain_graph"), value=m.Name("True"))],
)
# `model.no_sync_missing()`: fake ACC009, report only.
_REPORT_ONLY = m.Call(func=m.Attribute(attr=m.Name("no_sync_missing")))


def fake_acc001(facts):
    for call in m.findall(facts.module, _UNSCALED):
        receiver = call.func.value
        scaled = cst.BinaryOperation(
            left=receiver,
            operator=cst.Divide(),
            right=cst.Name("accum_steps"),
            lpar=[cst.LeftParen()],
            rpar=[cst.RightParen()],
        )
        new = call.with_changes(func=call.func.with_changes(value=scaled))
        fix = Fix("Divide the loss by `accum_steps` at the backward call", "safe", {call: new})
        yield Violation("ACC001", "loss handed to backward is never divided by accum_steps", call, fix)


def fake_acc006(facts):
    for call in m.findall(facts.module, _RETAIN):
        fix = Fix("Remove `retain_graph=True`", "unsafe", {call: call.with_changes(args=[])})
        yield Violation("ACC006", "backward(retain_graph=True) in a loop keeps graphs alive", call, fix)


def fake_acc009(facts):
    for call in m.findall(facts.module, _REPORT_ONLY):
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
