"""ACC005 in a trainer whose batch loop is one method (`train_one_epoch`), gated on the micro-steps
since the last step (`if curr_step - self.last_opt_step >= self.accumulate:`, in that method or in
a step method it calls on every batch), and whose epoch loop is another method that zeroes the
same optimizer before each epoch's batches (`self.before_epoch()` running
`self.optimizer.zero_grad()`): the micro-batches backwarded since the last step are wiped there
(YOLOv6's trainer). Reported at the zeroing call, report only. Silent where the mark is set anew in
each epoch, where nothing zeroes that optimizer at the epoch's start, and where the batch loop
flushes its tail."""

from __future__ import annotations

import pytest

from accumlint.engine import check_source
from tests.snippets import findings, row

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, batch_size):
        self.model, self.loader, self.batch_size = model, loader, batch_size
        self.max_stepnum = len(loader)
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        self.d_optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        self.accumulate = max(1, round(64 / batch_size))

    def train(self, epochs):
        self.before_train_loop()
        for self.epoch in range(epochs):
            self.before_epoch()
            self.train_one_epoch()

    def before_train_loop(self):
        self.last_opt_step = -1

    def before_epoch(self):
        self.model.train()
        EPOCH_START

    def train_one_epoch(self):
        for self.step, batch in enumerate(self.loader):
            loss = self.model(batch).sum()
            loss.backward()
            STEP
        AFTER

    def update_optimizer(self):
        curr_step = self.step + self.max_stepnum * self.epoch
        if curr_step - self.last_opt_step >= self.accumulate:
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.last_opt_step = curr_step
"""

IN_LOOP = """curr_step = self.step + self.max_stepnum * self.epoch
            if curr_step - self.last_opt_step >= self.accumulate:
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.last_opt_step = curr_step"""


def _trainer(step: str = "self.update_optimizer()", epoch_start: str = "self.optimizer.zero_grad()", after: str = "pass") -> str:
    return TRAINER.replace("STEP", step).replace("EPOCH_START", epoch_start).replace("AFTER", after)


def _acc005(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC005"]


@pytest.mark.parametrize("step", ["self.update_optimizer()", IN_LOOP])
def test_zeroing_before_each_epoch_of_a_carried_window_is_reported_at_its_call(step: str) -> None:
    source = _trainer(step)
    assert _acc005(source) == [row(source, "self.before_epoch()")]


def test_message_says_what_the_zeroing_does_and_offers_no_fix() -> None:
    result = check_source(_trainer().encode(), "t.py")
    [finding] = [f for f in result.findings if f.code == "ACC005"]
    assert "`self.before_epoch()` at the start of each epoch" in finding.message
    assert "wipes the gradients backwarded since that step" in finding.message
    assert finding.fix is None


@pytest.mark.parametrize("step,epoch_start,after", [
    ("self.update_optimizer()", "self.optimizer.zero_grad()\n        self.last_opt_step = -1", "pass"),  # mark set anew
    ("self.update_optimizer()", "pass", "pass"),  # nothing zeroes at the epoch's start
    ("self.update_optimizer()", "self.d_optimizer.zero_grad()", "pass"),  # another optimizer
    ("self.update_optimizer()", "self.optimizer.zero_grad()", "self.optimizer.step()"),  # the tail is flushed
    (IN_LOOP, "self.optimizer.zero_grad()\n        self.last_opt_step = -1", "pass"),
])
def test_clean_twins(step: str, epoch_start: str, after: str) -> None:
    assert _acc005(_trainer(step, epoch_start, after)) == []
