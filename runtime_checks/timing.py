"""`python -m runtime_checks.timing SCRIPT`: the script's run time with the checker on against
off, in one interpreter (so torch's import and start-up are not counted), alternating, median
of 3 ratios. Prints one number: the relative overhead."""

from __future__ import annotations

import contextlib
import io
import runpy
import statistics
import sys
import time

from accumlint.runtime.monitor import Monitor
from accumlint.runtime.patches import Installation


def _once(script: str, checked: bool) -> float:
    installation = Installation(Monitor()).install() if checked else None
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(script, run_name="__main__")
    finally:
        if installation is not None:
            installation.uninstall()
    return time.perf_counter() - start


def overhead(script: str, repeats: int = 3) -> float:
    _once(script, False)  # warm-up: lazy imports, kernels, compilation caches
    ratios = []
    for _ in range(repeats):
        base = _once(script, False)
        ratios.append(_once(script, True) / base - 1)
    return statistics.median(ratios)


if __name__ == "__main__":
    print(f"{overhead(sys.argv[1]):+.4f}")
