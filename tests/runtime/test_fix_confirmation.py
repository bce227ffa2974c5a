"""The confirmation the mission asks for: `accumlint check --fix` (with --unsafe-fixes where
the fix is marked unsafe) applied to each buggy scenario gives code that `accumlint run` then
passes (every scenario whose rule has a fix; a report-only rule's has none). Depends on the static checker (`python -m accumlint check`); the fixes and the runs are
made once, in the session fixture of conftest.py."""

import json

import pytest

from runtime_checks import SCENARIOS


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s.static_fix], ids=lambda s: s.name)
def test_static_fix_passes_the_runtime_check(scenario_runs, scenario):
    runs, copies, checks = scenario_runs
    path = copies[scenario.name]
    check = checks[scenario.name]
    left = [f for f in json.loads(check.stdout or "[]") if f["filename"].endswith(path.rsplit("/", 1)[-1])]
    assert left == [], check.stdout + check.stderr  # nothing left after --fix
    assert check.returncode == 0, check.stdout + check.stderr
    with open(path) as fixed, open(scenario.path("buggy")) as buggy:
        assert fixed.read() != buggy.read()
    result = runs[path]
    assert result["findings"] == [], result["stdout"][-2000:]
    assert result["status"] == 0, result["stdout"][-2000:]
