"""ACC001 reads a loss slot of a dict divided in place before backward (`out["loss"] /= k`,
`out["loss"] = out["loss"] / k`, `out["loss"].div_(k)`, an OpenMMLab hook's
`runner.outputs["loss"] /= self.update_interval`): the division reaches backward, so the rule is
silent. Dividing another slot (`out["aux"] /= k`) leaves the loss undivided: reported.
Forms: a script loop, a trainer method, an optimizer hook."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

LOOP = """
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        out = model(x, y)
        DIVIDE
        out["loss"].backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, accum):
        self.model, self.optimizer, self.accum = model, optimizer, accum

    def fit(self, loader):
        for step, batch in enumerate(loader):
            out = self.model(**batch)
            DIVIDE
            out["loss"].backward()
            if (step + 1) % self.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

DIVISIONS = ['out["loss"] /= K', 'out["loss"] = out["loss"] / K', 'out["loss"].div_(K)']


@pytest.mark.parametrize("loop, k", [(LOOP, "accum"), (TRAINER, "self.accum")])
@pytest.mark.parametrize("divide", DIVISIONS)
def test_a_slot_divided_in_place_is_clean(loop: str, k: str, divide: str) -> None:
    assert findings_of(loop.replace("DIVIDE", divide.replace("K", k)), "ACC001") == []


@pytest.mark.parametrize("loop, k", [(LOOP, "accum"), (TRAINER, "self.accum")])
@pytest.mark.parametrize("divide", ["pass", 'out["aux"] /= K'])
def test_the_loss_slot_left_undivided_is_reported(loop: str, k: str, divide: str) -> None:
    source = loop.replace("DIVIDE", divide.replace("K", k))
    [finding] = findings_of(source, "ACC001")
    assert finding.location.row == next(i for i, line in enumerate(source.splitlines(), 1) if 'out["loss"].backward()' in line)


def test_an_optimizer_hook_dividing_the_runner_outputs_is_clean() -> None:
    hook = """
from mmcv.runner import OptimizerHook


class GradAccumOptimizerHook(OptimizerHook):
    def __init__(self, update_interval=1):
        self.update_interval = update_interval

    def after_train_iter(self, runner):
        runner.outputs["loss"] /= self.update_interval
        runner.outputs["loss"].backward()
        if self.every_n_iters(runner, self.update_interval):
            runner.optimizer.step()
            runner.optimizer.zero_grad()
"""
    assert findings_of(hook) == []


def test_a_slot_divided_in_place_and_again_at_backward_is_divided_twice() -> None:
    source = LOOP.replace("DIVIDE", 'out["loss"] /= accum').replace('out["loss"].backward()', '(out["loss"] / accum).backward()')
    assert [f.code for f in findings_of(source, "ACC010")] == ["ACC010"]
    assert findings_of(source, "ACC001") == []
