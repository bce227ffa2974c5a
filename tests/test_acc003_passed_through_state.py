"""ACC003 on a state a model method hands back (`out, weight = model.adapt(x, weight)`): when the
method returns the state it was given (or a fresh constant in its place), no graph of this
iteration is carried into the next; when it returns something computed from the forward, one is.
The model is built the usual way, `Net(...).cuda()` or `.to(device)`, which is still an instance
of `Net`. Forms: a script, a trainer class, and the model built by a factory in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(8, 8)

    def forward(self, x):
        return self.layer(x)

    def adapt(self, x, weight=None):
        out = self.layer(x)
        if weight is None:
            weight = torch.ones(8).cuda()
        else:
            weight = RETURNED
        return (out * weight).mean(), weight
"""

SCRIPT = NET + """

model = Net().to("cuda")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
weight = None
for x in loader:
    loss, weight = model.adapt(x, weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

TRAINER = NET + """

class Trainer:
    def __init__(self):
        self.model = Net().cuda().train()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, loader):
        weight = None
        for x in loader:
            loss, weight = self.model.adapt(x, weight)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""

FACTORY = """
from nets import Net


def get_model():
    return Net().cuda()
"""

MAIN = """
import torch
from factory import get_model


def train_epoch(model, optimizer, loader, weight=None):
    for x in loader:
        loss, weight = model.adapt(x, weight)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return weight


def main(loader):
    model = get_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_epoch(model, optimizer, loader)
"""

PASSED = "weight"  # the state handed in, unchanged
COMPUTED = "weight * out.mean(0)"  # built from this iteration's forward


def _acc003(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC003", path=path)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("returned,found", [(PASSED, 0), (COMPUTED, 1)])
def test_state_handed_back(template: str, returned: str, found: int) -> None:
    assert len(_acc003(textwrap.dedent(template).replace("RETURNED", returned))) == found


@pytest.mark.parametrize("returned,found", [(PASSED, 0), (COMPUTED, 1)])
def test_model_from_a_factory_in_another_module(tmp_path: Path, returned: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "nets.py").write_text(textwrap.dedent(NET).replace("RETURNED", returned))
    (tmp_path / "factory.py").write_text(textwrap.dedent(FACTORY))
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(MAIN))
    assert len(_acc003(train.read_text(), str(train))) == found
