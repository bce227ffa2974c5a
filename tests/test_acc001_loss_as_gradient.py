"""ACC001 on `loss.backward(loss / k)`: the divided loss handed to backward as its `gradient`
argument multiplies each micro-batch's gradients by its own loss over k instead of dividing them by
k. Reported with the fix `(loss / k).backward()` (none when backward takes other arguments).
A loss differentiated after dividing, or a gradient that is not the loss itself, is not this.
Forms: a script with an inner micro-step loop, and a trainer class with a gate."""

from __future__ import annotations

import textwrap

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of

SCRIPT = """
import torch

GRADIENT_ACCUMULATE_EVERY = 4


def train(model, loader, optim, num_batches):
    for i in range(num_batches):
        model.train()
        for _ in range(GRADIENT_ACCUMULATE_EVERY):
            loss = model(next(loader), return_loss=True)
            BACKWARD
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optim.step()
        optim.zero_grad()
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, optimizer, accumulation_steps):
        self.model, self.loader, self.optimizer = model, loader, optimizer
        self.k = accumulation_steps

    def fit(self):
        for i, (x, y) in enumerate(self.loader):
            loss = (self.model(x) - y).pow(2).mean()
            BACKWARD
            if (i + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _acc001(source: str) -> list:
    return findings_of(source.encode(), "ACC001", path="train.py")


def _script(backward: str) -> str:
    return textwrap.dedent(SCRIPT).replace("BACKWARD", backward)


def _trainer(backward: str) -> str:
    return textwrap.dedent(TRAINER).replace("BACKWARD", backward)


def test_script_loss_as_its_own_gradient_is_reported_and_fixed() -> None:
    source = _script("loss.backward(loss / GRADIENT_ACCUMULATE_EVERY)")
    [finding] = _acc001(source)
    assert "as its `gradient`" in finding.message and "multiplied by its own loss" in finding.message
    fixed = fix_source(source, "train.py", select=("ACC001",)).fixed_source
    assert fixed is not None and "(loss / GRADIENT_ACCUMULATE_EVERY).backward()" in fixed
    compile(fixed, "train.py", "exec")
    assert _acc001(fixed) == []


def test_trainer_loss_as_its_own_gradient_is_reported() -> None:
    [finding] = _acc001(_trainer("loss.backward(loss / self.k)"))
    assert finding.fix is not None


def test_keyword_gradient_with_other_arguments_is_reported_without_a_fix() -> None:
    [finding] = _acc001(_trainer("loss.backward(gradient=loss / self.k, retain_graph=False)"))
    assert finding.fix is None


@pytest.mark.parametrize("backward", [
    "(loss / GRADIENT_ACCUMULATE_EVERY).backward()",
    "loss.backward(torch.ones_like(loss) / GRADIENT_ACCUMULATE_EVERY)",
])
def test_script_clean_twins(backward: str) -> None:
    assert _acc001(_script(backward)) == []
