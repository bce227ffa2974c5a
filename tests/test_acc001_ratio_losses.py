"""ACC001 reads a ratio of one micro-batch's own quantities (an IoU `inter / union`, a product of
box sides) as part of the loss, not as a division by the window: a box loss built on one is still
owed its division by k. A division by a count made from other values (a window's token count, an
item of the batch) still counts as a possible k division and keeps ACC001 silent. Script,
trainer-class and multi-module forms, with clean twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

IOU = """
def box_iou(a, b, eps=1e-7):
    w1, h1 = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    w2, h2 = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    inter = (torch.min(a[:, 2], b[:, 2]) - torch.max(a[:, 0], b[:, 0])).clamp(0) * \\
        (torch.min(a[:, 3], b[:, 3]) - torch.max(a[:, 1], b[:, 1])).clamp(0)
    union = w1 * h1 + w2 * h2 - inter + eps
    iou = inter / union
    v = (4 / math.pi ** 2) * torch.pow(torch.atan(w2 / h2) - torch.atan(w1 / h1), 2)
    return iou - v * iou


def compute_loss(pred, boxes, labels):
    iou = box_iou(pred[:, :4], boxes)
    lbox = (1.0 - iou).mean()
    lcls = F.cross_entropy(pred[:, 4:], labels)
    return 0.05 * lbox + lcls
"""

SCRIPT = """
import math
import torch
import torch.nn.functional as F
{helpers}

def train(model, loader, optimizer, accum_steps):
    for i, (x, boxes, labels) in enumerate(loader):
        loss = {loss}
        loss.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import math
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, cfg):
        self.model = model
        self.optimizer = optimizer
        self.accum_steps = cfg.accum_steps

    def box_loss(self, pred, boxes):
        inter = (torch.min(pred[:, 2], boxes[:, 2]) - torch.max(pred[:, 0], boxes[:, 0])).clamp(0)
        union = (pred[:, 2] - pred[:, 0]) + (boxes[:, 2] - boxes[:, 0]) - inter
        return (1.0 - inter / union).mean()

    def train_epoch(self, loader):
        for i, (x, boxes, labels) in enumerate(loader):
            pred = self.model(x)
            loss = {loss}
            loss.backward()
            if (i + 1) % self.accum_steps == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _script(loss: str = "compute_loss(model(x), boxes, labels)") -> str:
    return SCRIPT.format(helpers=IOU, loss=loss)


def test_an_iou_box_loss_still_owes_the_division():
    source = _script()
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]


def test_the_iou_box_loss_divided_by_k_is_clean():
    assert findings(_script("compute_loss(model(x), boxes, labels) / accum_steps")) == []


def test_a_trainer_box_loss_with_an_iou_ratio_is_reported():
    source = TRAINER.format(loss="0.05 * self.box_loss(pred, boxes) + F.cross_entropy(pred[:, 4:], labels)")
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]


def test_the_trainer_box_loss_divided_by_k_is_clean():
    source = TRAINER.format(
        loss="(0.05 * self.box_loss(pred, boxes) + F.cross_entropy(pred[:, 4:], labels)) / self.accum_steps"
    )
    assert findings(source) == []


def test_the_iou_helper_in_another_module(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text("import math\nimport torch\nimport torch.nn.functional as F\n" + textwrap.dedent(IOU))
    source = SCRIPT.format(helpers="from losses import compute_loss\n", loss="compute_loss(model(x), boxes, labels)")
    (tmp_path / "train.py").write_text(textwrap.dedent(source).lstrip())
    monkeypatch.chdir(tmp_path)
    assert findings((tmp_path / "train.py").read_text(), "train.py") == [("ACC001", row(source, "loss.backward()"))]


COUNTED = """
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, accum_steps):
    window = []
    for i, batch in enumerate(loader):
        window.append(batch)
        if len(window) < accum_steps:
            continue
        n_tokens = sum((b["labels"] != -100).sum() for b in window)
        for batch in window:
            logits = model(batch["input_ids"])
            loss = {loss}
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        window = []
"""


@pytest.mark.parametrize("loss", [
    'F.cross_entropy(logits, batch["labels"], reduction="sum") / n_tokens',
    'F.cross_entropy(logits, batch["labels"], reduction="none").sum() / batch["n_window_tokens"]',
])
def test_a_division_by_a_count_from_other_values_stays_silent(loss):
    assert [code for code, _ in findings(COUNTED.format(loss=loss))] == []


def test_a_division_sharing_only_a_loop_counter_is_no_ratio():
    # `t` is read by the numerator only as a position: dividing by it is still some division
    source = """
import torch.nn.functional as F

def train(model, loader, opt, k):
    for i, (x, y) in enumerate(loader):
        loss = 0.0
        for t in range(x.size(1)):
            loss = loss + F.mse_loss(model(x[:, t]), y[:, t]) / (t + 1)
        loss.backward()
        if (i + 1) % k == 0:
            opt.step()
            opt.zero_grad()
"""
    assert [code for code, _ in findings(source) if code == "ACC001"] == []
