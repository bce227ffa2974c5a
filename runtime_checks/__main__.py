"""`python -m runtime_checks`: run every scenario under `accumlint run`, print a table.

Columns: scenario, expected code, whether the buggy form is flagged with it, whether the fixed
form is clean, and the checker's overhead on the fixed form (its run time with the checker on
against off, in one interpreter: see runtime_checks/timing.py; these loops are tiny, so the
per-step cost weighs more than on a real model: benchmarks/runtime_overhead.py measures that)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from runtime_checks import CONTROLS, SCENARIOS, control_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_checked(script: str) -> tuple[list[str], float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "accumlint.run", "--report", report, script],
                              capture_output=True, text=True, env=_env(), cwd=ROOT)
        elapsed = time.perf_counter() - start
        codes = [f["code"] for f in json.load(open(report))] if os.path.exists(report) else []
    return codes, elapsed, proc.returncode


def measure_overhead(script: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "runtime_checks.timing", script],
                          capture_output=True, text=True, env=_env(), cwd=ROOT)
    try:
        return f"{100 * float(proc.stdout.strip().splitlines()[-1]):+.0f}%"
    except (ValueError, IndexError):
        return "n/a"


def main() -> int:
    import torch

    device = "cuda (float16 AMP)" if torch.cuda.is_available() else "cpu"
    print(f"device: {device}, torch {torch.__version__}")
    header = f"{'scenario':28} {'code':7} {'buggy flagged':14} {'fixed clean':12} {'overhead':>9}"
    print(header)
    print("-" * len(header))
    failures = 0
    for scenario in SCENARIOS:
        buggy_codes, _, _ = run_checked(scenario.path("buggy"))
        fixed_codes, _, status = run_checked(scenario.path("fixed"))
        flagged = scenario.code in buggy_codes
        clean = not fixed_codes and status == 0
        failures += (not flagged) + (not clean)
        overhead = measure_overhead(scenario.path("fixed"))
        print(f"{scenario.name:28} {scenario.code:7} {'yes' if flagged else 'NO':14} "
              f"{'yes' if clean else 'NO ' + ','.join(fixed_codes):12} {overhead:>9}")
    for name in CONTROLS:
        codes, _, status = run_checked(control_path(name))
        clean = not codes and status == 0
        failures += not clean
        print(f"{'control: ' + name:28} {'-':7} {'-':14} {'yes' if clean else 'NO ' + ','.join(codes):12}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
