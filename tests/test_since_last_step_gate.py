"""A step gated on the micro-steps since the last one (YOLO's `if ni - last_opt_step >= accumulate:
... last_opt_step = ni`) is a window of `accumulate`: ACC009 and ACC001 read it as any window.
The tail alone is no ACC005: the count carries into the next epoch or not depending on where
`last_opt_step` is reset, which the gate does not say. Here the mark is set only before the epochs
and the optimizer is zeroed at the start of each epoch, which wipes the micro-batches backwarded
since the last step: ACC005 at that zeroing (see test_acc005_wiped_at_epoch_start.py)."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine
from tests.snippets import findings_of

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
    return sorted((f.code, f.location.row) for f in findings_of(text, path="train.py"))


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if text in line)


def test_micro_steps_since_the_last_step_make_a_window():
    source = SCRIPT.format(scale=" / accumulate", gate=GATE, mark=MARK)
    backward = _row(source, "scaler.scale(loss).backward()")
    epoch_start = _row(source, "        optimizer.zero_grad()")
    assert _found(source) == [("ACC005", epoch_start), ("ACC009", backward)]
    without_it = SCRIPT.replace("        optimizer.zero_grad()\n        for i", "        for i")
    assert _found(without_it.format(scale=" / accumulate", gate=GATE, mark=MARK)) == [("ACC009", backward - 1)]


def test_an_undivided_loss_in_that_window_is_acc001():
    source = SCRIPT.format(scale="", gate=GATE, mark=MARK)
    backward = _row(source, "scaler.scale(loss).backward()")
    epoch_start = _row(source, "        optimizer.zero_grad()")
    assert _found(source) == [("ACC001", backward), ("ACC005", epoch_start), ("ACC009", backward)]


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


# The same count written from the window's first micro-step (`batch_id - start_id + 1 == k`, with
# `start_id = batch_id + 1` set when the step runs), a shape of graph-learning engines.
START_OF_WINDOW = """
import torch
from torch import nn


def train(model, loader, optimizer, world_size, interval, batch_per_epoch):
    if world_size > 1:
        model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    for epoch in range(10):
        start_id = 0
        gradient_interval = min(batch_per_epoch - start_id, interval)
        for batch_id, batch in enumerate(loader):
            loss = model(batch){scale}
            loss.backward()
            if {gate}:
                optimizer.step()
                optimizer.zero_grad()
                start_id = {mark}
                gradient_interval = min(batch_per_epoch - start_id, interval)
"""
START_GATE = "batch_id - start_id + 1 == gradient_interval"


def test_counted_from_the_first_micro_step_of_the_window():
    divided = START_OF_WINDOW.format(scale=" / gradient_interval", gate=START_GATE, mark="batch_id + 1")
    assert _found(divided) == [("ACC009", _row(divided, "loss.backward()"))]
    undivided = START_OF_WINDOW.format(scale="", gate=START_GATE, mark="batch_id + 1")
    backward = _row(undivided, "loss.backward()")
    assert _found(undivided) == [("ACC001", backward), ("ACC009", backward)]
    # `batch_id + 1 - start_id` is the same count
    swapped = START_OF_WINDOW.format(scale="", gate="batch_id + 1 - start_id == gradient_interval", mark="batch_id + 1")
    assert [code for code, _ in _found(swapped)] == ["ACC001", "ACC009"]


@pytest.mark.parametrize("gate, mark", [
    (START_GATE, "batch_id"),  # the mark is one behind the count: not the micro-steps since the step
    (START_GATE, "0"),  # never follows the counter
    ("batch_id - start_id + 1 == 1", "batch_id + 1"),  # one micro-step: no accumulation
])
def test_counts_from_a_mark_that_do_not_make_a_window(gate, mark):
    assert _found(START_OF_WINDOW.format(scale="", gate=gate, mark=mark)) == []


def test_an_engine_class_counting_from_the_window_start(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "engine.py").write_text(textwrap.dedent("""
        from torch import nn

        from steps import run_batch


        class Engine:
            def __init__(self, model, optimizer, gradient_interval, world_size):
                self.model, self.optimizer = model, optimizer
                self.gradient_interval, self.world_size = gradient_interval, world_size

            def train(self, loader):
                model = self.model
                if self.world_size > 1:
                    model = nn.parallel.DistributedDataParallel(model)
                start_id = 0
                for batch_id, batch in enumerate(loader):
                    run_batch(model, batch, self.gradient_interval)
                    if batch_id - start_id + 1 == self.gradient_interval:
                        self.optimizer.step()
                        self.optimizer.zero_grad()
                        start_id = batch_id + 1
    """))
    (tmp_path / "steps.py").write_text("def run_batch(model, batch, k):\n    loss = model(batch) / k\n    loss.backward()\n")
    path = tmp_path / "engine.py"
    assert [f.code for f in findings_of(path.read_bytes(), path=str(path))] == ["ACC009"]
    path.write_text(path.read_text().replace("start_id = batch_id + 1", "start_id = 0"))
    assert engine.check_source(path.read_bytes(), str(path)).findings == []
