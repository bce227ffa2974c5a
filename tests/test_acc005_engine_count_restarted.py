"""ACC005 on a DeepSpeed engine whose accumulation count the code resets before each pass over the
data (`model.micro_steps = 0`, BEiT's `train_one_epoch`) while `model.backward(loss)` and
`model.step()` run on every micro-step: the engine's windows then start with each epoch, and the
last len % gradient_accumulation_steps micro-batches never reach an optimizer step. Reported at
the reset, report only. Silent without the reset (the engine's count runs on across epochs), with
the step held by the loop's own gate, and with a step after the loop. Forms: a function handed the
engine, and a trainer holding it."""

from __future__ import annotations

import pytest

from accumlint.engine import check_source
from tests.snippets import findings, row

EPOCH = """
import torch


def train_one_epoch(model, data_loader, update_freq):
    model.zero_grad()
    RESET
    for data_iter_step, batch in enumerate(data_loader):
        loss = model(batch) / update_freq
        model.backward(loss)
        STEP
    AFTER
"""

TRAINER = """
class Trainer:
    def __init__(self, engine, train_loader):
        self.engine, self.train_loader = engine, train_loader

    def train_epoch(self):
        self.engine.micro_steps = 0
        for batch in self.train_loader:
            loss = self.engine(batch)
            self.engine.backward(loss)
            self.engine.step()
"""


def _epoch(reset: str = "model.micro_steps = 0", step: str = "model.step()", after: str = "pass") -> str:
    return EPOCH.replace("RESET", reset).replace("STEP", step).replace("AFTER", after)


def _acc005(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC005"]


def test_engine_count_reset_before_the_pass_is_reported_there() -> None:
    source = _epoch()
    assert _acc005(source) == [row(source, "model.micro_steps = 0")]
    [finding] = [f for f in check_source(source.encode(), "t.py").findings if f.code == "ACC005"]
    assert "never reach an optimizer step" in finding.message and finding.fix is None


def test_trainer_engine_count_reset_is_reported() -> None:
    assert _acc005(TRAINER) == [row(TRAINER, "self.engine.micro_steps = 0")]


@pytest.mark.parametrize("reset,step,after", [
    ("pass", "model.step()", "pass"),  # the engine's count runs on across epochs
    ("model.micro_steps = 0", "if (data_iter_step + 1) % update_freq == 0:\n            model.step()", "pass"),
    ("model.micro_steps = 0", "model.step()", "model.step()"),  # stepped after the pass
])
def test_clean_twins(reset: str, step: str, after: str) -> None:
    assert _acc005(_epoch(reset, step, after)) == []


CUT = (
    "step = data_iter_step // update_freq\n"
    "        if step >= num_training_steps_per_epoch:\n"
    "            continue\n"
    "        loss = model(batch) / update_freq"
)


def test_an_epoch_cut_to_whole_windows_leaves_no_tail() -> None:
    """`step = i // update_freq; if step >= steps_per_epoch: continue` (BEiT's fine-tuning loop):
    the batches past the last whole window are skipped, so every window the engine counts from
    the reset is full."""
    source = _epoch().replace("loss = model(batch) / update_freq", CUT).replace(
        "def train_one_epoch(model, data_loader, update_freq):",
        "def train_one_epoch(model, data_loader, update_freq, num_training_steps_per_epoch):",
    )
    assert "continue" in source
    assert _acc005(source) == []
    trainer = TRAINER.replace(
        "for batch in self.train_loader:",
        "for i, batch in enumerate(self.train_loader):\n            if i // self.k >= self.steps_per_epoch:\n                break",
    )
    assert "break" in trainer
    assert _acc005(trainer) == []
