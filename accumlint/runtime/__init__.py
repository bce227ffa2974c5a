"""The runtime checker: `accumlint run` observes a real training run and reports the rules it breaks.

Only this subpackage (and `accumlint/run.py`) may import torch, and only lazily: importing
`accumlint.runtime` itself never does, so the CLI can say clearly when torch is missing.
"""

from __future__ import annotations

import importlib.util

TORCH_MISSING = "accumlint run needs torch: pip install 'accumlint[runtime]'"


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None
