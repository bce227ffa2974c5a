"""ACC001 reads a mean multiplied by the micro-batch's size (`return loss * bs`, YOLO's
`compute_loss`, "scaled by batch_size") as a sum over samples, which accumulation up to a nominal
batch needs no division for: silent. The same loss returned as a plain mean is reported.
Forms: a script, a trainer class, and the loss function in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

LOSS = """
import torch


def compute_loss(pred, targets):
    bs = pred.shape[0]
    lbox = (pred - targets).pow(2).mean()
    lobj = pred.sigmoid().mean()
    loss = lbox + lobj
    return RETURNED, torch.stack((lbox, lobj)).detach()
"""

SCRIPT = """
def train(model, optimizer, loader, accumulate):
    for ni, (imgs, targets) in enumerate(loader):
        loss, loss_items = compute_loss(model(imgs), targets)
        loss.backward()
        if ni % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, accumulate):
        self.model, self.optimizer, self.accumulate = model, optimizer, accumulate

    def train_epoch(self, loader):
        for ni, (imgs, targets) in enumerate(loader):
            loss, loss_items = compute_loss(self.model(imgs), targets)
            loss.backward()
            if ni % self.accumulate == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("loop", [SCRIPT, TRAINER])
@pytest.mark.parametrize("returned,reported", [("loss * bs", 0), ("loss", 1)])
def test_mean_times_batch_size_is_a_sum(loop: str, returned: str, reported: int) -> None:
    source = textwrap.dedent(LOSS).replace("RETURNED", returned) + textwrap.dedent(loop)
    assert len(findings_of(source, "ACC001", path="train.py")) == reported


@pytest.mark.parametrize("returned,reported", [("loss * bs", 0), ("loss", 1)])
def test_the_loss_function_in_another_module(tmp_path: Path, returned: str, reported: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "loss.py").write_text(textwrap.dedent(LOSS).replace("RETURNED", returned).lstrip())
    train = tmp_path / "train.py"
    train.write_text("from loss import compute_loss\n" + textwrap.dedent(SCRIPT))
    assert len(findings_of(train.read_bytes(), "ACC001", path=str(train))) == reported
