"""The fixer as the last line of defence: a fix is tried before anyone sees it, and one that
would write broken code, keep its own finding or bring another is withheld, and the finding is
reported without it, with a warning that names the rule."""

from __future__ import annotations

import ast
import json

import pytest

from accumlint import engine
from accumlint.model import Fix, TextEdit, Violation

SOURCE = """\
for i, (x, y) in enumerate(loader):
    loss = crit(model(x), y)
    loss.backward()
    if (i + 1) % k == 0 or i + 1 == len(loader):
        opt.step()
        opt.zero_grad()
"""


def _backward_calls(facts):
    for node in ast.walk(facts.module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward":
            yield node


def _rule(replacement):
    """A stand-in ACC001 that reports every backward call and replaces its receiver's text."""

    def check(facts):
        for call in _backward_calls(facts):
            if not isinstance(call.func.value, ast.Name):
                continue  # `(loss / k).backward()` is fixed
            start, end = facts.source.span(call.func.value)
            text = replacement(facts.source.text[start:end])
            yield Violation("ACC001", "stand-in", call, Fix("stand-in fix", "safe", (TextEdit(start, end, text),)))

    return check


def _noisy_acc006(facts):
    """Reports every `.clone()`: a fix that writes one brings a new finding."""
    for node in ast.walk(facts.module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "clone":
            yield Violation("ACC006", "stand-in", node)


@pytest.fixture
def rules(monkeypatch):
    def install(**checks):
        monkeypatch.setattr(engine, "RULE_CHECKS", checks)

    return install


@pytest.mark.parametrize("replacement, problem", [
    (lambda text: f"({text} /", "does not compile"),  # unbalanced
    (lambda text: text, "its finding would remain"),  # changes nothing that matters
    (lambda text: f"{text}.clone()", "would introduce ACC006"),
])
def test_a_failing_fix_is_withheld_and_reported(rules, replacement, problem):
    rules(ACC001=_rule(replacement), ACC006=_noisy_acc006)
    result = engine.check_source(SOURCE, "t.py")
    finding = next(f for f in result.findings if f.code == "ACC001")
    assert finding.fix is None  # never shown, never in JSON or SARIF
    assert result.error is None  # the file was checked: the finding stands, without its fix
    (notice,) = result.notices
    assert notice.row == 3 and "the ACC001 fix here was withheld (" in notice.message and problem in notice.message
    fixed = engine.fix_source(SOURCE, "t.py")
    assert fixed.fixed_source is None and fixed.fixes_applied == 0  # never applied
    assert fixed.error is None and [f.code for f in fixed.findings if f.code == "ACC001"] == ["ACC001"]
    assert [n.row for n in fixed.notices] == [3] and problem in fixed.notices[0].message


# Through the command line: the finding is reported without its fix, a warning names the rule,
# and the exit status follows the findings. (No cache: the stand-in rules are not in its key.)

def _withholding(project, rules):
    rules(ACC001=_rule(lambda text: text))  # its fix never removes its finding
    (project / "t.py").write_text(SOURCE)


WITHHELD = "warning: t.py:3: the ACC001 fix here was withheld (its finding would remain)"


REPORTED = "t.py:3:5: ACC001 stand-in"  # without [*]: no fix is offered


@pytest.mark.parametrize("flags, status, report", [
    ((), 1, REPORTED), (("--exit-zero",), 0, REPORTED), (("--fix",), 1, REPORTED),
    (("--fix", "--exit-zero"), 0, REPORTED), (("--diff",), 1, "No errors would be fixed (1 would remain)."),
])
def test_a_withheld_fix_warns_and_the_exit_status_follows_the_findings(project, invoke, rules, flags, status,
                                                                       report):
    _withholding(project, rules)
    result = invoke("check", "--no-cache", *flags, "t.py")
    assert result.exit_code == status, result.stderr
    assert WITHHELD in result.stderr and "error:" not in result.stderr
    assert report in result.stdout + result.stderr
    assert "[*]" not in result.stdout and "fixable" not in result.stdout
    assert (project / "t.py").read_text() == SOURCE


def test_a_withheld_fix_is_absent_from_json_and_sarif(project, invoke, rules):
    _withholding(project, rules)
    result = invoke("check", "--no-cache", "--format", "json", "t.py")
    assert result.exit_code == 1 and WITHHELD in result.stderr
    (entry,) = json.loads(result.stdout)
    assert entry["code"] == "ACC001" and entry["fix"] is None  # the finding, and no error entry
    sarif = json.loads(invoke("check", "--no-cache", "--format", "sarif", "t.py").stdout)
    run = sarif["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is True
    assert [r["ruleId"] for r in run["results"]] == ["ACC001"] and "fixes" not in run["results"][0]


def test_a_withheld_fix_in_a_notebook_names_its_cell(project, invoke, rules):
    rules(ACC001=_rule(lambda text: text))
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
             for source in ("import torch\n", SOURCE)]
    (project / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    result = invoke("check", "--no-cache", "--exit-zero", "nb.ipynb")
    assert result.exit_code == 0
    assert "warning: nb.ipynb:cell 2:3: the ACC001 fix here was withheld" in result.stderr


def test_an_exception_in_a_rule_still_exits_2_with_exit_zero(project, invoke, rules):
    def broken(facts):
        raise RuntimeError("rule exploded")

    rules(ACC001=_rule(lambda text: text), ACC002=broken)
    (project / "t.py").write_text(SOURCE)
    result = invoke("check", "--no-cache", "--exit-zero", "t.py")
    assert result.exit_code == 2
    assert "t.py: error: internal error: RuntimeError: rule exploded" in result.stderr


def test_a_good_fix_passes_its_check(rules):
    rules(ACC001=_rule(lambda text: f"({text} / k)"), ACC006=_noisy_acc006)
    result = engine.check_source(SOURCE, "t.py")
    assert result.error is None and result.findings[0].fix is not None
    fixed = engine.fix_source(SOURCE, "t.py")
    assert fixed.error is None and "(loss / k).backward()" in fixed.fixed_source
    assert fixed.fixes_applied == 1 and fixed.findings == []


def test_the_count_is_findings_fixed_not_edits_applied(rules):
    def two_edit_fix(facts):
        for call in _backward_calls(facts):
            if not isinstance(call.func.value, ast.Name):
                continue
            start, end = facts.source.span(call.func.value)
            edits = (TextEdit(start, start, "("), TextEdit(end, end, " / k)"))
            yield Violation("ACC001", "stand-in", call, Fix("two edits", "safe", edits))

    rules(ACC001=two_edit_fix)
    source = SOURCE + SOURCE.replace("loss", "aux")
    fixed = engine.fix_source(source, "t.py")
    assert fixed.fixes_applied == 2 and fixed.findings == []


# The real rules on the shapes whose fixes once wrote broken code.
KEPT = """\
def train(loader, k):
    total, hist, n = 0.0, [], 0
    for i, (x, y) in enumerate(loader):
        loss = crit(model(x), y) / k
        loss.backward()
        {store}
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
    print(total, hist)
"""


@pytest.mark.parametrize("store, fixed_store", [
    ("total += loss * 2", "total += (loss * 2).detach()"),
    ("total += loss * n", "total += (loss * n).detach()"),
    ("hist.append(loss / 2)", "hist.append((loss / 2).detach())"),
    ("total += -loss", "total += (-loss).detach()"),
    ("total = total + loss if n else total", None),
])
def test_kept_graph_fixes_detach_the_whole_value(store, fixed_store):
    source = KEPT.format(store=store)
    fixed = engine.fix_source(source, "t.py")
    assert fixed.error is None
    if fixed_store is None:
        return
    assert fixed_store in fixed.fixed_source
    compile(fixed.fixed_source, "t.py", "exec")
    assert engine.fix_source(fixed.fixed_source, "t.py").fixed_source is None  # idempotent
    assert all(f.code != "ACC002" for f in engine.check_source(fixed.fixed_source, "t.py").findings)
