"""An OpenMMLab optimizer hook that accumulates (`after_train_iter` runs backward on every
iteration of the runner and steps under `self.every_n_iters(runner, self.update_interval)`) is one
micro-step of a window of `update_interval` iterations, as Lightning's training_step is: the
window rules read it. Zeroing the gradients outside the test (ACC007) is reported; the hook that
zeroes with the step is clean. `every_n_inner_iters` counts within an epoch the same way.
Forms: the hook alone, and the hook in a package module beside the training script."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

HOOK = """
from mmcv.runner import HOOKS, OptimizerHook


@HOOKS.register_module()
class GradAccumOptimizerHook(OptimizerHook):
    def __init__(self, update_interval=1, grad_clip=None):
        self.grad_clip = grad_clip
        self.update_interval = update_interval

    def before_run(self, runner):
        runner.optimizer.zero_grad()

    def after_train_iter(self, runner):
        runner.outputs["loss"] /= self.update_interval
        runner.outputs["loss"].backward()
        if self.GATE(runner, self.update_interval):
            if self.grad_clip is not None:
                self.clip_grads(runner.model.parameters())
            runner.optimizer.step()
            ZERO_IN
        ZERO_OUT
"""

IN = ("runner.optimizer.zero_grad()", "pass")
OUT = ("pass", "runner.optimizer.zero_grad()")


def _hook(gate: str, zero: tuple[str, str]) -> str:
    return HOOK.replace("GATE", gate).replace("ZERO_IN", zero[0]).replace("ZERO_OUT", zero[1])


@pytest.mark.parametrize("gate", ["every_n_iters", "every_n_inner_iters"])
def test_zeroing_every_iteration_of_the_runner_is_reported(gate: str) -> None:
    source = _hook(gate, OUT)
    [finding] = findings_of(source)
    assert finding.code == "ACC007"
    lines = source.splitlines()
    assert finding.location.row == len(lines) - lines[::-1].index("        runner.optimizer.zero_grad()")


@pytest.mark.parametrize("gate", ["every_n_iters", "every_n_inner_iters"])
def test_the_hook_that_zeroes_with_the_step_is_clean(gate: str) -> None:
    assert findings_of(_hook(gate, IN)) == []


def test_a_test_of_another_object_is_no_window() -> None:
    # `other.every_n_iters(...)` is not the hook's own test of the runner's count
    source = _hook("every_n_iters", OUT).replace("self.every_n_iters(", "self.schedule.every_n_iters(")
    assert findings_of(source, "ACC007") == []


def test_the_hook_in_a_package_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    package = tmp_path / "mmdet_custom"
    package.mkdir()
    (package / "__init__.py").write_text("from .hooks import GradAccumOptimizerHook\n")
    hooks = package / "hooks.py"
    hooks.write_text(_hook("every_n_iters", OUT))
    (tmp_path / "train.py").write_text(
        "from mmdet_custom import GradAccumOptimizerHook\n\n\n"
        "def main(runner, cfg):\n    runner.register_hook(GradAccumOptimizerHook(**cfg.optimizer_config))\n    runner.run()\n"
    )
    assert [f.code for f in findings_of(hooks.read_bytes(), path=str(hooks))] == ["ACC007"]
