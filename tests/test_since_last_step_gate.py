"""A step gated on the micro-steps since the last one (YOLO's `if ni - last_opt_step >= accumulate:
... last_opt_step = ni`) is a window of `accumulate`: ACC009 and ACC001 read it as any window.
ACC005 stays silent on it: the count carries into the next epoch or not depending on where
`last_opt_step` is reset, which the gate does not say."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, scaler, epochs, nbs=64, batch_size=16):
    accumulate = max(round(nbs / batch_size), 1)
    model = DDP(model, device_ids=[0])
    nb = len(loader)
    last_opt_step = -1
    for epoch in range(epochs):
        optimizer.zero_grad()
        for i, (imgs, targets) in enumerate(loader):
            ni = i + nb * epoch
            with torch.cuda.amp.autocast():
                loss = criterion(model(imgs), targets){scale}
            scaler.scale(loss).backward()
            if {gate}:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                {mark}
"""

GATE = "ni - last_opt_step >= accumulate"
MARK = "last_opt_step = ni"


def _found(source: str) -> list[tuple[str, int]]:
    text = textwrap.dedent(source).lstrip()
    result = engine.check_source(text, "train.py")
    assert result.error is None, result.error
    return sorted((f.code, f.location.row) for f in result.findings)


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if text in line)


def test_micro_steps_since_the_last_step_make_a_window():
    source = SCRIPT.format(scale=" / accumulate", gate=GATE, mark=MARK)
    backward = _row(source, "scaler.scale(loss).backward()")
    assert _found(source) == [("ACC009", backward)]  # no ACC005: the tail carries on or not, unsaid


def test_an_undivided_loss_in_that_window_is_acc001():
    source = SCRIPT.format(scale="", gate=GATE, mark=MARK)
    backward = _row(source, "scaler.scale(loss).backward()")
    assert _found(source) == [("ACC001", backward), ("ACC009", backward)]


@pytest.mark.parametrize("gate, mark", [
    (GATE, "pass"),  # the mark never follows the counter: no count since a step
    ("ni - last_opt_step >= 1", MARK),  # one micro-step: no accumulation
    ("ni - last_opt_step > accumulate", MARK),  # not read
])
def test_gates_that_are_no_window_of_k(gate, mark):
    assert _found(SCRIPT.format(scale=" / accumulate", gate=gate, mark=mark)) == []


TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer, accumulate):
        self.model = DDP(model, device_ids=[0])
        self.optimizer, self.accumulate = optimizer, accumulate
        self.last_opt_step = -1

    def optimizer_step(self):
        self.optimizer.step()
        self.optimizer.zero_grad()

    def train_epoch(self, loader, epoch):
        for i, (x, y) in enumerate(loader):
            ni = i + len(loader) * epoch
            loss = criterion(self.model(x), y) / self.accumulate
            loss.backward()
            if ni - self.last_opt_step >= self.accumulate:
                self.optimizer_step()
                self.last_opt_step = {mark}
"""


def test_a_trainer_that_counts_since_its_last_step():
    source = TRAINER.format(mark="ni")
    assert _found(source) == [("ACC009", _row(source, "loss.backward()"))]
    assert _found(TRAINER.format(mark="-1")) == []
