"""ACC012 on a trainer whose step method (`_train_step`: zero, `accelerator.backward`, step) is
called from the epoch loop of the same class inside `with self.accelerator.accumulate(model):`.
The Accelerator holds that step for its k micro-steps, so the step method stepping on every call
is right: silent. Its twin, the same epoch loop calling the step method outside `accumulate()`,
is still reported: the Accelerator divides each loss by k while the step runs on every batch."""

from __future__ import annotations

from tests.snippets import findings, row

TRAINER = """
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, optimizer, loader, cfg):
        self.accelerator = Accelerator(gradient_accumulation_steps=cfg.grad_accum)
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)

    def _train_step(self, batch):
        pitches = []
        for i in range(batch.shape[0]):
            pitches.append(self.pitch_of(batch[i]))
        self.optimizer.zero_grad()
        loss = self.model(batch, pitches).mean()
        self.accelerator.backward(loss)
        self.optimizer.step()
        return loss.item()

    def _train_epoch(self):
        for batch in self.loader:
            {enter}
                self._train_step(batch)
"""

ACCUMULATE = "with self.accelerator.accumulate(self.model):"
PLAIN = "if True:"


def test_a_step_method_called_inside_accumulate_is_clean() -> None:
    assert findings(TRAINER.format(enter=ACCUMULATE)) == []


def test_a_step_method_called_outside_accumulate_is_reported() -> None:
    source = TRAINER.format(enter=PLAIN)
    assert findings(source) == [("ACC012", row(source, "self.optimizer.step()"))]


def test_another_class_calling_a_namesake_inside_accumulate_silences_nothing() -> None:
    other = TRAINER.format(enter=ACCUMULATE).replace("class Trainer:", "class Other:").replace(
        "from accelerate import Accelerator\n", "")
    source = TRAINER.format(enter=PLAIN) + other
    assert findings(source) == [("ACC012", row(source, "self.optimizer.step()"))]


DRIVER = """

def main(model, optimizer, loader, cfg):
    trainer = Trainer(model, optimizer, loader, cfg)
    for batch in loader:
        with trainer.accelerator.accumulate(trainer.model):
            trainer._train_step(batch)
"""


def test_a_driver_function_calling_the_step_method_inside_accumulate_is_clean() -> None:
    assert findings(TRAINER.format(enter=ACCUMULATE) + DRIVER) == []
