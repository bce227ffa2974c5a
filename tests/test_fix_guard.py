"""The fixer as the last line of defence: a fix is tried before anyone sees it, and one that
would write broken code, keep its own finding or bring another is withheld and reported."""

from __future__ import annotations

import ast

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
    assert result.error is not None and result.error.message.startswith("internal error: ")
    assert f"the ACC001 fix at 3:5 was withheld: " in result.error.message and problem in result.error.message
    fixed = engine.fix_source(SOURCE, "t.py")
    assert fixed.fixed_source is None and fixed.fixes_applied == 0  # never applied
    assert fixed.error is not None and problem in fixed.error.message


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
