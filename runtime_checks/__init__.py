"""Runnable training loops, each bug in buggy and fixed form, small enough for a CPU in seconds.

`python -m runtime_checks` runs them all under `accumlint run` (on CUDA with float16 AMP when a
GPU is present, since each script picks its device at run time) and prints a table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Scenario:
    name: str
    code: str  # the code `accumlint run` must report on the buggy form
    unsafe_fix: bool = False  # the static fix needs --unsafe-fixes
    static_fix: bool = True  # `accumlint check --fix` repairs it (False: the rule reports only)

    def path(self, variant: str) -> str:
        return os.path.join(HERE, "scenarios", self.name, f"{variant}.py")


SCENARIOS = [
    Scenario("seed001_linreg", "ACC001"),
    Scenario("seed000_rnn_amp_tbptt", "ACC003"),
    Scenario("seed002_rnn_amp_full_bptt", "ACC001"),
    Scenario("seed003_multi_loss", "ACC006", unsafe_fix=True),
    Scenario("acc001_not_divided", "ACC001"),
    Scenario("acc002_loss_kept", "ACC002"),
    Scenario("acc003_tbptt_retain", "ACC003", unsafe_fix=True),
    Scenario("acc004_clip_scaled", "ACC004"),
    Scenario("acc005_partial_window", "ACC005"),
    Scenario("acc006_retain_graph", "ACC006", unsafe_fix=True),
    Scenario("acc007_zero_in_window", "ACC007"),
    Scenario("acc008_scheduler", "ACC008", unsafe_fix=True),
    Scenario("acc010_double_divided", "ACC010", unsafe_fix=True),
    Scenario("acc015_clip_in_window", "ACC015", static_fix=False),
]

# Correct loops that must never raise a finding (DDP runs separately under torchrun).
CONTROLS = ["gan", "lbfgs", "two_losses_one_graph", "scaler_skips", "batchnorm_uneven",
            "compiled"]


def control_path(name: str) -> str:
    return os.path.join(HERE, "controls", f"{name}.py")
