"""Engine behaviour the rules do not cover: fix previews on demand, positions, bad input."""

import libcst as cst
import pytest
from click.testing import CliRunner
from libcst.metadata import MetadataWrapper, PositionProvider

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


def test_positions_match_libcst_position_provider():
    module = cst.parse_module(TRICKY)
    violations = engine._violations(module, engine.ALL_CODES)
    assert {v.code for v in violations} == {"ACC001", "ACC002", "ACC005"}
    spans = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    located = engine._Located(module)
    for violation in violations:
        start, end = located.range_of(violation.node)
        span = spans[violation.node]
        assert (start.row, start.column) == (span.start.line, span.start.column + 1)
        assert (end.row, end.column) == (span.end.line, span.end.column + 1)


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
def test_input_libcst_cannot_take_is_one_line(source, cause):
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
