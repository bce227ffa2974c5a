"""The confirmation the mission asks for: `accumlint check --fix` (with --unsafe-fixes where
the fix is marked unsafe) applied to each buggy scenario gives code that `accumlint run` then
passes. Depends on the static checker (`python -m accumlint check`)."""

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from runtime_helpers import ROOT, subprocess_env
from runtime_checks import SCENARIOS

BATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batch_run.py")


def _fix(scenario, path) -> subprocess.CompletedProcess:
    args = ["--fix", "--unsafe-fixes"] if scenario.unsafe_fix else ["--fix"]
    return subprocess.run([sys.executable, "-m", "accumlint", "check", *args, str(path)],
                          capture_output=True, text=True, env=subprocess_env(), cwd=ROOT)


def _run_batch(group: list[str]) -> dict:
    proc = subprocess.run([sys.executable, BATCH, *group], capture_output=True, text=True,
                          env=subprocess_env(), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fixed_by_static(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fixed")
    paths = {}
    for scenario in SCENARIOS:
        paths[scenario.name] = str(tmp / f"{scenario.name}.py")
        shutil.copy(scenario.path("buggy"), paths[scenario.name])
    # Each file is fixed and then run on its own: the processes go side by side, one per core.
    workers = max(2, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        fixed = pool.map(lambda s: _fix(s, paths[s.name]), SCENARIOS)
        outputs = {scenario.name: proc for scenario, proc in zip(SCENARIOS, fixed)}
        files = list(paths.values())
        runs = {}
        for part in pool.map(_run_batch, [files[i::workers] for i in range(workers) if files[i::workers]]):
            runs.update(part)
    return paths, outputs, runs


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_static_fix_passes_the_runtime_check(fixed_by_static, scenario):
    paths, outputs, runs = fixed_by_static
    check = outputs[scenario.name]
    assert check.returncode == 0, check.stdout + check.stderr  # nothing left after --fix
    with open(paths[scenario.name]) as fixed, open(scenario.path("buggy")) as buggy:
        assert fixed.read() != buggy.read()
    result = runs[paths[scenario.name]]
    assert result["findings"] == [], result["stdout"][-2000:]
    assert result["status"] == 0, result["stdout"][-2000:]
