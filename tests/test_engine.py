"""Engine behaviour the rules do not cover: fix previews on demand, positions, bad input."""

import pytest
from click.testing import CliRunner

from accumlint import engine
from accumlint.cli import cli

TRICKY = '''"""doc"""
import torch; k = 4

# comment

@decorator
@other(1,
       2)
def train(loader):
    for i, (x, y) in enumerate(loader):
        loss = crit(model(x), y)
        loss.backward()
        if (i + 1) % k == 0:
            opt.step(); opt.zero_grad()
class T:
    @staticmethod
    def f(loader):
        total = 0
        for i, (x, y) in enumerate(loader):
            loss = crit(model(x), y) / k
            loss.backward()
            total += loss
            if (i + 1) % k == 0 or i + 1 == len(loader):
                opt.step()
        print(total)
x = 1; y = 2
for i, (a, b) in enumerate(dl):
    l = m(a); l.backward()
    if not (i + 1) % k:
        opt.step()
'''


def test_positions_are_the_reported_nodes_spans():
    findings = engine.check_source(TRICKY, "t.py").findings
    assert {(f.code, f.location.row) for f in findings} == {
        ("ACC001", 12), ("ACC005", 13), ("ACC002", 22), ("ACC014", 24), ("ACC001", 28), ("ACC005", 29),
        ("ACC014", 30),
    }
    spans = {(f.code, f.location.row): (f.location.column, f.end_location.row, f.end_location.column) for f in findings}
    assert spans[("ACC001", 12)] == (9, 12, 24)  # `loss.backward()`, first to last character
    assert spans[("ACC001", 28)] == (15, 28, 27)  # after `l = m(a); ` on a shared line
    assert spans[("ACC005", 13)][:2] == (9, 14)  # a compound statement spans its body


def test_columns_count_characters_not_bytes():
    source = (
        "for i, (x, y) in enumerate(loader):\n"
        "    loss = crit(model(x), y); s = 'äöü'; loss.backward()\n"
        "    if (i + 1) % k == 0:\n"
        "        opt.step()\n"
    )
    finding = next(f for f in engine.check_source(source.encode(), "t.py").findings if f.code == "ACC001")
    line = source.splitlines()[1]
    assert finding.location.column == line.index("loss.backward") + 1
    fixed = engine.fix_source(source.encode(), "t.py").fixed_source.decode()
    assert "s = 'äöü'; (loss / k).backward()" in fixed


def test_fix_previews_only_when_asked():
    with_edits = engine.check_source(TRICKY, "t.py")
    without = engine.check_source(TRICKY, "t.py", with_edits=False)
    assert [(f.code, f.location) for f in with_edits.findings] == [(f.code, f.location) for f in without.findings]
    fixable = [f for f in with_edits.findings if f.fix]
    assert fixable and all(f.fix.edits for f in fixable)
    for f in without.findings:
        if f.fix:
            assert f.fix.edits == () and f.fix.message and f.fix.applicability in {"safe", "unsafe"}


@pytest.mark.parametrize("source, cause", [
    ("x = " + "[" * 1500 + "]" * 1500 + "\nloss.backward()\n", "syntax error"),
    ("x = " + "(" * 1000 + "1" + ")" * 1000 + "\nloss.backward()\n", "syntax error"),
    ("# coding: klingon\nx = 1\n", "cannot decode"),
])
def test_input_the_parser_refuses_is_one_line(source, cause):
    for result in (engine.check_source(source.encode(), "bad.py"), engine.fix_source(source.encode(), "bad.py")):
        assert result.error is not None and result.error.message.startswith(cause)
        assert "\n" not in result.error.message


def test_jobs_do_not_change_the_output(tmp_path):
    for n in range(10):
        (tmp_path / f"m{n}.py").write_text(TRICKY.replace("k = 4", f"k = {n + 2}"))
    runner = CliRunner()
    outputs = {
        jobs: runner.invoke(cli, ["check", "--no-cache", "--jobs", jobs, str(tmp_path)]).output
        for jobs in ("1", "2")
    }
    assert outputs["1"] == outputs["2"] and outputs["1"].count("ACC00") == 50
