"""A loss module of the project (`criterion = YoloLoss(...)`, `self.criterion = ...`) is read
through its `forward`: summed over the batch (`reduction='sum'` on every term, the darknet way, with
the learning rate divided by the batch), accumulating k micro-batches of sums gives the sum over
the whole batch, and no division is missing. The same module with mean-reduced terms keeps ACC001.
Script and trainer forms; the loss is unpacked from a tuple as detection losses return it."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

CRITERION = """
import torch
import torch.nn.functional as F
from torch import nn


class DetectionLoss(nn.Module):
    def forward(self, pred, target):
        loss_box = F.mse_loss(pred[..., :4], target[..., :4]{reduction})
        loss_obj = F.binary_cross_entropy(pred[..., 4], target[..., 4]{reduction})
        loss = loss_box + loss_obj
        return loss, loss_box, loss_obj
"""

SCRIPT = CRITERION + """

def train(model, loader, optimizer, subdivisions):
    criterion = DetectionLoss()
    for i, (images, boxes) in enumerate(loader):
        loss, loss_box, loss_obj = criterion(model(images), boxes)
        loss.backward()
        if (i + 1) % subdivisions == 0 or i + 1 == len(loader):
            optimizer.step()
            model.zero_grad()
"""

TRAINER = CRITERION + """

class Trainer:
    def __init__(self, model, optimizer, subdivisions):
        self.model, self.optimizer, self.subdivisions = model, optimizer, subdivisions
        self.criterion = DetectionLoss()

    def train_epoch(self, loader):
        for i, (images, boxes) in enumerate(loader):
            loss, loss_box, loss_obj = self.criterion(self.model(images), boxes)
            loss.backward()
            if (i + 1) % self.subdivisions == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.model.zero_grad()
"""


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_a_project_loss_summed_over_the_batch_needs_no_division(template):
    assert findings(template.format(reduction=", reduction='sum'")) == []


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_the_same_loss_averaged_is_reported(template):
    source = template.format(reduction="")
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]
