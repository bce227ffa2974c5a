"""ACC006 on losses a project generator yields (`for loss, last in model(x):` where the wrapper's
`forward` walks the segments and yields each one's loss, carrying a memory from segment to
segment): a later loss's graph may run through this one's, so `retain_graph=True` may be needed
and the rule stays silent. Twin: the same loop over a function that returns a list of losses from
separate forwards is still reported. Forms: a script, a trainer whose model's `forward` yields,
and the generator in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

WRAPPER = """
import torch
from torch import nn
import torch.nn.functional as F


class SegmentWrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        losses = []
        mem = None
        for xs, ys in zip(x.split(4, dim=1), y.split(4, dim=1)):
            logits, mem = self.net(xs, mem)
            loss = F.cross_entropy(logits, ys)
            RESULT
        return losses
"""

YIELD = "yield loss, mem is None"
BATCHES = """

def batches_of(x, y):
    for start in range(0, len(x), 4):
        yield x[start:start + 4], y[start:start + 4]


def train_on_batches(net, x, y, optimizer, criterion):
    for xb, yb in batches_of(x, y):
        loss = criterion(net(xb), yb)
        loss.backward(retain_graph=True)
        optimizer.step()
        optimizer.zero_grad()
"""

SCRIPT = """

def train(net, batches, optimizer):
    model = SegmentWrapper(net)
    for x, y in batches:
        for loss, last in model(x, y):
            loss.backward(retain_graph=True)
            if last:
                optimizer.step()
                optimizer.zero_grad()
"""

TRAINER = """

class Trainer:
    def __init__(self, net, optimizer):
        self.model = SegmentWrapper(net)
        self.optimizer = optimizer

    def fit(self, batches):
        for x, y in batches:
            for loss, last in self.model(x, y):
                loss.backward(retain_graph=True)
                if last:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""


def _acc006(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC006", path=path)


def _wrapper(result: str) -> str:
    return textwrap.dedent(WRAPPER).replace("RESULT", result.replace("\n", "\n            "))


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_losses_of_a_generator_are_not_reported(template: str) -> None:
    assert _acc006(_wrapper(YIELD) + textwrap.dedent(template)) == []


def test_batches_of_a_generator_are_still_reported() -> None:
    source = _wrapper(YIELD) + textwrap.dedent(BATCHES)
    found = _acc006(source)
    assert len(found) == 1
    assert "no later backward in the iteration goes through it" in found[0].message


@pytest.mark.parametrize("extra,found", [("", 0), (BATCHES, 1)])
def test_generator_in_another_module(tmp_path: Path, extra: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "wrapper.py").write_text(_wrapper(YIELD))
    train = tmp_path / "train.py"
    train.write_text("from wrapper import SegmentWrapper\n" + textwrap.dedent(SCRIPT) + textwrap.dedent(extra))
    assert len(_acc006(train.read_text(), str(train))) == found
