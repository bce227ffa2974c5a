"""A trainer whose loop calls a per-batch method (`self.train_in_steps()`) that runs the backward
and then, on every call, another method of the same class (`self.update_optimizer()`) that steps
under its own gate (`if curr_step - self.last_opt_step >= self.accumulate:`, with `curr_step`
made from the object's own attributes): the gate holds the loop's step, so the loop is an
accumulation window (YOLOv6's trainer). Read as such, its DDP model all-reduces on every
micro-step (ACC009) and a mean loss reaches backward undivided (ACC001). Silent where the inner
method steps on every call, where it is called only under a condition, and where its counter is
made from something the caller cannot see."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader, rank, batch_size):
        self.loader = loader
        self.max_stepnum = len(loader)
        self.batch_size = batch_size
        self.model = DDP(model, device_ids=[rank])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.last_opt_step = -1

    def train_one_epoch(self, epoch):
        self.epoch = epoch
        for self.step, self.batch in enumerate(self.loader):
            self.train_in_steps()

    def train_in_steps(self):
        images, targets = self.batch
        loss = torch.nn.functional.mse_loss(self.model(images), targets)
        loss.backward()
        CALL

    def update_optimizer(self):
        curr_step = COUNT
        self.accumulate = max(1, round(64 / self.batch_size))
        GATE
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.last_opt_step = curr_step
"""

GATED = "if curr_step - self.last_opt_step >= self.accumulate:"


def _trainer(call: str = "self.update_optimizer()", count: str = "self.step + self.max_stepnum * self.epoch",
             gate: str = GATED) -> str:
    return TRAINER.replace("CALL", call).replace("COUNT", count).replace("GATE", gate)


def test_gate_two_methods_down_makes_the_loop_a_window() -> None:
    source = _trainer()
    assert findings(source) == sorted([
        ("ACC001", row(source, "loss.backward()")),
        ("ACC009", row(source, "self.train_in_steps()")),
    ])


@pytest.mark.parametrize("call,count,gate", [
    ("self.update_optimizer()", "self.step + self.max_stepnum * self.epoch", "if True:"),  # steps every call
    ("if self.step > 0:\n            self.update_optimizer()", "self.step + self.max_stepnum * self.epoch", GATED),
    ("self.update_optimizer()", "global_counter()", GATED),  # a count the caller cannot see
])
def test_clean_twins(call: str, count: str, gate: str) -> None:
    found = [code for code, _ in findings(_trainer(call, count, gate))]
    assert "ACC001" not in found and "ACC009" not in found
