"""ACC009 on a window split over two functions: `forward_backward(batch)` runs a DDP model over k
micro-batches with a backward on each, and its caller steps right after it. Every pass
all-reduces; the finding is on the callee's backward. Clean twins: `no_sync()` on the non-final
micro-batches, and the bare model. Forms: a trainer class and a script (the model wrapped in the
caller and handed in)."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

TRAINER = """
import contextlib

import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, micro_batches, rank):
        self.model = WRAP
        self.optimizer = optimizer
        self.micro_batches = micro_batches

    def forward_backward(self, batch):
        chunks = batch.chunk(self.micro_batches)
        for i in range(self.micro_batches):
            FORWARD

    def train_step(self, batch):
        self.optimizer.zero_grad()
        self.forward_backward(batch)
        self.optimizer.step()
"""

PLAIN = "loss = F.mse_loss(self.model(chunks[i]), chunks[i]) / self.micro_batches\n            loss.backward()"
SYNCED = (
    "with self.model.no_sync() if i + 1 < self.micro_batches else contextlib.nullcontext():\n"
    "                loss = F.mse_loss(self.model(chunks[i]), chunks[i]) / self.micro_batches\n"
    "                loss.backward()"
)

SCRIPT = """
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def forward_backward(model, batch, k):
    for micro in batch.chunk(k):
        loss = F.mse_loss(model(micro), micro) / k
        loss.backward()


def train(model, optimizer, loader, k, rank):
    model = DistributedDataParallel(model, device_ids=[rank])
    for batch in loader:
        optimizer.zero_grad()
        forward_backward(model, batch, k)
        optimizer.step()
"""


def _acc009(source: str) -> list:
    return findings_of(textwrap.dedent(source).lstrip(), "ACC009", path="train.py")


def _trainer(wrap: str = "DistributedDataParallel(model, device_ids=[rank])", forward: str = PLAIN) -> str:
    return TRAINER.replace("WRAP", wrap).replace("FORWARD", forward)


def test_trainer_split_window_all_reduces_on_every_pass() -> None:
    source = _trainer()
    [finding] = _acc009(source)
    lines = textwrap.dedent(source).lstrip().splitlines()
    assert lines[finding.location.row - 1].strip() == "loss.backward()"
    assert "`self.model.no_sync()`" in finding.message


def test_trainer_clean_twins() -> None:
    assert _acc009(_trainer(forward=SYNCED)) == []
    assert _acc009(_trainer(wrap="model")) == []


def test_script_model_handed_to_the_callee() -> None:
    [finding] = _acc009(SCRIPT)
    assert "no_sync()" in finding.message
    assert _acc009(SCRIPT.replace("    model = DistributedDataParallel(model, device_ids=[rank])\n", "")) == []
