"""ACC005 on a step gated on the micro-steps since the last one (`if ni - last_opt_step >=
accumulate:`, YOLO's form), whose mark is set only before the epochs and in the step block, while
the optimizer is zeroed at the start of each epoch, before its batch loop: the micro-batches
backwarded since the last step are wiped there, computed and never applied. Reported at that
zeroing, report only. A mark that starts anew in the epochs, a flush or a deliberate discard after
the batch loop, or no zeroing at the epoch's start is not this. Forms: a script and a trainer."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, loader, optimizer, epochs, batch_size):
    nb = len(loader)
    accumulate = max(round(64 / batch_size), 1)
    last_opt_step = -1
    for epoch in range(epochs):
        model.train()
        EPOCH_START
        for i, (imgs, targets) in enumerate(loader):
            ni = i + nb * epoch
            loss = model(imgs, targets).mean()
            loss.backward()
            if ni - last_opt_step >= accumulate:
                optimizer.step()
                optimizer.zero_grad()
                last_opt_step = ni
        AFTER
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, optimizer, batch_size):
        self.model, self.loader, self.optimizer = model, loader, optimizer
        self.accumulate = max(round(64 / batch_size), 1)
        self.last_opt_step = -1

    def train(self, epochs):
        nb = len(self.loader)
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            for i, (imgs, targets) in enumerate(self.loader):
                ni = i + nb * epoch
                loss = self.model(imgs, targets).mean()
                loss.backward()
                if ni - self.last_opt_step >= self.accumulate:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    self.last_opt_step = ni
"""


def _acc005(source: str) -> list:
    return findings_of(source.encode(), "ACC005", path="train.py")


def _script(epoch_start: str = "optimizer.zero_grad()", after: str = "pass") -> str:
    return textwrap.dedent(SCRIPT).replace("EPOCH_START", epoch_start).replace("AFTER", after)


def test_script_zeroing_at_each_epoch_start_is_reported_there() -> None:
    source = _script()
    [finding] = _acc005(source)
    assert finding.location.row == source.splitlines().index("        optimizer.zero_grad()") + 1
    assert "wipes the gradients backwarded since that step" in finding.message
    assert finding.fix is None


def test_trainer_zeroing_at_each_epoch_start_is_reported() -> None:
    assert len(_acc005(textwrap.dedent(TRAINER))) == 1


@pytest.mark.parametrize("epoch_start,after", [
    ("pass", "pass"),                                              # nothing wipes the carried window
    ("optimizer.zero_grad()\n        last_opt_step = -1", "pass"),  # the mark starts anew each epoch
    ("optimizer.zero_grad()", "optimizer.step()"),                 # the tail is flushed after the loop
    ("optimizer.zero_grad()", "optimizer.zero_grad()"),            # the tail is dropped on purpose
])
def test_script_clean_twins(epoch_start: str, after: str) -> None:
    assert _acc005(_script(epoch_start, after)) == []
