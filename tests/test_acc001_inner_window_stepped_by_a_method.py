"""A trainer method that runs a whole window per call (`for _ in range(k): ... backward()`, then
the step) where the step is reached through a method of the object or of an object it holds
(`self.step_one()`, `self.optimizers.optimizer_scaler_step_all(self.grad_scaler)` of an
`Optimizers` class that steps a dict of optimizers): the window is read as when the step is
written out, so an undivided loss is ACC001. Twins: the loss divided by k (clean), and a method
named for a step that steps nothing (`self.log_step()`: no window, clean). Forms: the classes in
one module, and the `Optimizers` class in another module, built by a factory there while the
trainer also annotates the attribute with the imported class (`optimizers: Optimizers`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

OPTIMIZERS = """
import torch


class Optimizers:
    def __init__(self, optimizers):
        self.optimizers = optimizers

    def zero_grad_all(self):
        for _, optimizer in self.optimizers.items():
            optimizer.zero_grad()

    def optimizer_scaler_step_all(self, grad_scaler):
        for _, optimizer in self.optimizers.items():
            grad_scaler.step(optimizer)


def setup_optimizers(params) -> "Optimizers":
    return Optimizers({"fields": torch.optim.Adam(params)})
"""

TRAINER = """
class Trainer:
    optimizers: Optimizers

    def __init__(self, model, config):
        self.model = model
        self.config = config
        self.grad_scaler = torch.cuda.amp.GradScaler()
        self.optimizers = setup_optimizers(model.parameters())

    def log_step(self):
        print("stepped")

    def step_one(self):
        self.optimizers.optimizer_scaler_step_all(self.grad_scaler)

    def train_iteration(self, loader):
        self.optimizers.zero_grad_all()
        for _ in range(self.config.accumulate_grad_steps):
            x, y = next(loader)
            loss = LOSS
            self.grad_scaler.scale(loss).backward()
        STEP
        self.grad_scaler.update()

    def train(self, loader):
        for step in range(self.config.max_steps):
            self.train_iteration(loader)
"""

UNDIVIDED = "(self.model(x) - y).pow(2).mean()"
DIVIDED = "(self.model(x) - y).pow(2).mean() / self.config.accumulate_grad_steps"
STEPS = ["self.optimizers.optimizer_scaler_step_all(self.grad_scaler)", "self.step_one()"]


def _trainer(loss: str, step: str) -> str:
    return textwrap.dedent(TRAINER).replace("LOSS", loss).replace("STEP", step)


@pytest.mark.parametrize("step", STEPS)
def test_undivided_loss_of_a_window_stepped_by_a_method(step: str) -> None:
    found = findings_of(textwrap.dedent(OPTIMIZERS) + _trainer(UNDIVIDED, step), "ACC001")
    assert len(found) == 1 and "`self.config.accumulate_grad_steps`" in found[0].message


@pytest.mark.parametrize("step", STEPS)
def test_divided_loss_is_clean(step: str) -> None:
    assert findings_of(textwrap.dedent(OPTIMIZERS) + _trainer(DIVIDED, step), "ACC001") == []


def test_method_named_for_a_step_that_steps_nothing_is_no_window() -> None:
    assert findings_of(textwrap.dedent(OPTIMIZERS) + _trainer(UNDIVIDED, "self.log_step()"), "ACC001") == []


@pytest.mark.parametrize("loss,found", [(UNDIVIDED, 1), (DIVIDED, 0)])
def test_optimizers_class_in_another_module(tmp_path: Path, loss: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "optimizers.py").write_text(textwrap.dedent(OPTIMIZERS))
    trainer = tmp_path / "trainer.py"
    trainer.write_text("import torch\nfrom optimizers import Optimizers, setup_optimizers\n" + _trainer(loss, STEPS[0]))
    assert len(findings_of(trainer.read_text(), "ACC001", path=str(trainer))) == found
