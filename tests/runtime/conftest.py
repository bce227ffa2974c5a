import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("torch")  # the runtime checker is an optional extra; CI installs torch

from runtime_helpers import ROOT, subprocess_env  # noqa: E402
from runtime_checks import CONTROLS, SCENARIOS, control_path  # noqa: E402

BATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "batch_run.py")


def _run_batch(scripts: list[str]) -> dict:
    proc = subprocess.run([sys.executable, BATCH, *scripts], capture_output=True, text=True,
                          env=subprocess_env(), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fix(paths: list[str], unsafe: bool) -> subprocess.CompletedProcess:
    args = ["--fix", "--unsafe-fixes"] if unsafe else ["--fix"]
    return subprocess.run([sys.executable, "-m", "accumlint", "check", *args, "--format", "json", *paths],
                          capture_output=True, text=True, env=subprocess_env(), cwd=ROOT)


@pytest.fixture(scope="session")
def scenario_runs(tmp_path_factory):
    """Every scenario's buggy and fixed script, every control, and a copy of each buggy script
    after `accumlint check --fix` (with --unsafe-fixes where its fix is unsafe), all run through
    `accumlint run`'s runner in one batch per core, so torch is imported once per core for the
    whole matrix. Returns (runs by script path, copies by scenario name, the check after --fix
    of each copy)."""
    folder = tmp_path_factory.mktemp("fixed")
    copies = {}
    fixable = [s for s in SCENARIOS if s.static_fix]
    for scenario in fixable:
        copies[scenario.name] = str(folder / f"{scenario.name}.py")
        shutil.copy(scenario.path("buggy"), copies[scenario.name])
    groups = {unsafe: [copies[s.name] for s in fixable if s.unsafe_fix == unsafe] for unsafe in (False, True)}
    workers = max(2, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        fixes = dict(zip(groups, pool.map(lambda unsafe: _fix(groups[unsafe], unsafe), groups)))
        checks = {s.name: fixes[s.unsafe_fix] for s in fixable}
        scripts = [s.path(v) for s in SCENARIOS for v in ("buggy", "fixed")]
        scripts += [control_path(c) for c in CONTROLS] + list(copies.values())
        runs: dict = {}
        for part in pool.map(_run_batch, [scripts[i::workers] for i in range(workers) if scripts[i::workers]]):
            runs.update(part)
    return runs, copies, checks
