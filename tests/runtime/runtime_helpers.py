"""Shared by the runtime tests (a unique module name: tests/conftest.py exists too)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # runtime_checks/ is not installed with the package
    sys.path.insert(0, ROOT)


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    return env


def accumlint_run(*args: str, cwd: str = ROOT) -> subprocess.CompletedProcess:
    """`python -m accumlint.run ARGS` in a fresh interpreter, as a user would run it."""
    return subprocess.run([sys.executable, "-m", "accumlint.run", *args], capture_output=True,
                          text=True, env=subprocess_env(), cwd=cwd, timeout=300)
