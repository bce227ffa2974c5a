import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")  # the runtime checker is an optional extra; CI installs torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
