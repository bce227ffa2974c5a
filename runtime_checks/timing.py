"""`python -m runtime_checks.timing [--repeats N] SCRIPT [ARGS...]`: the script's CPU time with
the checker on against off, in one interpreter (so torch's import and start-up are not
counted), alternating, median of the ratios. Prints one number: the relative overhead.

CPU time (time.process_time) rather than wall-clock time: other processes on a shared machine
disturb it far less. The script runs as `python SCRIPT ARGS` would (its argv and sys.path[0])."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import statistics
import sys
import time

from accumlint.runtime.monitor import Monitor
from accumlint.runtime.patches import Installation


def _once(script: str, args: list[str], checked: bool) -> float:
    installation = Installation(Monitor()).install() if checked else None
    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    sys.argv, sys.path[0] = [script, *args], os.path.dirname(os.path.abspath(script))
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(script, run_name="__main__")
    finally:
        elapsed = time.process_time() - start
        sys.argv, sys.path[0] = saved_argv, saved_path0
        if installation is not None:
            installation.uninstall()
    return elapsed


def overhead(script: str, args: list[str], repeats: int = 3) -> float:
    import torch

    torch.set_num_threads(1)  # CPU time of one thread: idle spinning of a pool is not work
    _once(script, args, False)  # warm-up: lazy imports, kernels, compilation caches
    ratios = []
    for _ in range(repeats):
        base = _once(script, args, False)
        ratios.append(_once(script, args, True) / base - 1)
    return statistics.median(ratios)


if __name__ == "__main__":
    argv = sys.argv[1:]
    repeats = 3
    if argv[:1] == ["--repeats"]:
        repeats, argv = int(argv[1]), argv[2:]
    print(f"{overhead(argv[0], argv[1:], repeats):+.4f}")
