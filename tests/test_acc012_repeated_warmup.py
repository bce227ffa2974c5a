"""ACC012 stays silent on a loop that repeats one training step on the same values (`for _ in
range(3): train_step(model, static_batch); optimizer_step()`, a warm-up before capturing CUDA
graphs or a benchmark): nothing is bound in it, its target is never read and no `next()` draws a
batch, so it is no pass over data whose steps should be held for a window. The training loop
beside it, stepping on every batch while the code counts updates in windows, is still reported.
Forms: a script with module functions, and a trainer class."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import argparse

import torch


def train_step(model, batch, scaler):
    loss = model(batch).mean()
    scaler.scale(loss).backward()


def optimizer_step(optimizer, scaler):
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
    parser.add_argument("--train_batch_size", type=int, default=64)
    args = parser.parse_args()
    args.train_batch_size = args.train_batch_size // args.gradient_accumulation_steps
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    loader = torch.utils.data.DataLoader(torch.randn(256, 8), batch_size=args.train_batch_size)
    static_batch = torch.ones(args.train_batch_size, 8)
    LOOP
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, gradient_accumulation_steps, batch_size):
        self.model = model
        self.loader = loader
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.micro_batch = batch_size // gradient_accumulation_steps
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.static_batch = torch.ones(self.micro_batch, 8)

    def train_step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()

    def optimizer_step(self):
        self.optimizer.step()
        self.optimizer.zero_grad()

    def fit(self):
        LOOP
"""

WARMUP = "for _ in range(3):\n    train_step(model, static_batch, scaler)\n    optimizer_step(optimizer, scaler)"
EVERY_BATCH = "for batch in loader:\n    train_step(model, batch, scaler)\n    optimizer_step(optimizer, scaler)"


def _acc012(source: str) -> list:
    return findings_of(source.encode(), "ACC012", path="train.py")


def _fill(template: str, loop: str, indent: int) -> str:
    return textwrap.dedent(template).replace("LOOP", loop.replace("\n", "\n" + " " * indent))


def _trainer_loop(loop: str) -> str:
    return (loop.replace("train_step(model, ", "self.train_step(").replace(", scaler)", ")")
            .replace("optimizer_step(optimizer)", "self.optimizer_step()").replace("static_batch", "self.static_batch")
            .replace("in loader", "in self.loader").replace("iter(loader)", "iter(self.loader)"))


def test_script_warmup_is_clean() -> None:
    assert _acc012(_fill(SCRIPT, WARMUP, 4)) == []


def test_script_training_loop_stepping_every_batch_is_reported() -> None:
    source = _fill(SCRIPT, EVERY_BATCH, 4)
    found = _acc012(source)
    assert len(found) == 1 and "runs on every micro-step" in found[0].message


@pytest.mark.parametrize("loop,reported", [
    (WARMUP, 0),
    (EVERY_BATCH, 1),
    # the same call every time, but the target is read: a pass that differs per iteration
    ("for i in range(3):\n    train_step(model, static_batch[i], scaler)\n    optimizer_step(optimizer, scaler)", 1),
    # a batch drawn by `next()` each time is data
    ("it = iter(loader)\nfor _ in range(3):\n    train_step(model, next(it), scaler)\n    optimizer_step(optimizer, scaler)", 1),
])
def test_trainer_forms(loop: str, reported: int) -> None:
    source = _fill(TRAINER, _trainer_loop(loop), 8)
    assert len(_acc012(source)) == reported
