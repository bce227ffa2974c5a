"""Shared by the runtime tests (a unique module name: tests/conftest.py exists too)."""

import os
import subprocess
from typing import Optional
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # runtime_checks/ is not installed with the package
    sys.path.insert(0, ROOT)


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # The runs of a fixture go side by side, one per core; letting each one's torch also spread
    # its tiny matrix products over every core only makes them wait on each other.
    env.setdefault("OMP_NUM_THREADS", "1")
    for launcher_variable in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        env.pop(launcher_variable, None)
    return env


def accumlint_run(*args: str, cwd: str = ROOT, extra_env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """`python -m accumlint.run ARGS` in a fresh interpreter, as a user would run it."""
    env = subprocess_env()
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "accumlint.run", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)
