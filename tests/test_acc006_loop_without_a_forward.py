"""ACC006 and a loop that runs no forward of its own (Grad-CAM over the boxes of one inference:
each pass backs `(scores[i] * onehot).sum()` of scores computed before the loop): every pass goes
back through the graph built before it, so `retain_graph=True` is needed, whatever produced the
scores (a method of the class out of sight). The same loop that runs the model per pass builds its
own graph, and is reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

CAM = """
import torch


class GradCAM:
    def __init__(self, model, threshold):
        self.model = model
        self.threshold = threshold

    def run(self, image):
        result = self.predict(image)
        extra = result["extra_data"]
        maps = []
        for index, box in enumerate(result["bbox"]):
            if box[1] < self.threshold:
                continue
            SCORE
            label = torch.argmax(score)
            onehot = torch.nn.functional.one_hot(label, num_classes=len(score))
            target = torch.sum(score * onehot)
            target.backward(retain_graph=True)
            maps.append(self.model.features.grad.mean().item())
            self.model.zero_grad()
        return maps
"""

SHARED = 'score = extra["scores"][int(index)]'
FRESH = 'score = self.model(image)["scores"][int(index)]'


@pytest.mark.parametrize("score,found", [(SHARED, 0), (FRESH, 1)])
def test_loop_with_no_forward_of_its_own_needs_the_graph(score: str, found: int) -> None:
    source = textwrap.dedent(CAM).replace("SCORE", score)
    assert len(findings_of(source, "ACC006")) == found


PROBE = """
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def probe(backbone, x, y, dim, classes):
    feats = FEATS
    w = torch.zeros(dim, classes, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    for _ in range(100):
        loss = LOSS
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
    return w
"""


@pytest.mark.parametrize(
    "feats,loss,found",
    [
        ("backbone(x).detach()", "F.cross_entropy(feats @ w, y)", 1),  # fixed features: nothing shared
        ("backbone(x)", "F.cross_entropy(feats @ w, y)", 0),  # the backbone's graph, shared by every pass
        ("x", "F.cross_entropy(checkpoint(backbone, feats) @ w, y)", 1),  # a forward in the loop
    ],
)
def test_what_the_loop_reads_from_before_it(feats: str, loss: str, found: int) -> None:
    source = textwrap.dedent(PROBE).replace("FEATS", feats).replace("LOSS", loss)
    assert len(findings_of(source, "ACC006")) == found
