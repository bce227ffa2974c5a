"""ACC002 on a second output of a project model: `out, dist = model(x)` (or a named method,
`model.forward_boosting(x)`) where the class's method returns `out, dist` and `dist` holds a graph
there (computed from `out`, or a fresh buffer filled by index with losses: `dist[i] = loss_i`),
then `dist_total = dist_total + dist` across the epoch. Twins: the method detaches it, returns a
number, or a buffer filled under `no_grad` or with `.item()`. Forms: a script (model built in the
loop's function, or handed in by the one caller), a trainer class, and the model in another module."""

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
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        out = self.fc(x)
        BODY
        return out, dist
"""

SCRIPT = NET + """

def train_epoch(model, loader, optimizer):
    dist_total = torch.zeros(3)
    for x, y in loader:
        out, dist = model(x)
        dist_total = dist_total + dist
        loss = (out - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return dist_total


def main(loader):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        total = train_epoch(model, loader, optimizer)
        print(total)
"""

TRAINER = NET.replace("def forward(self, x):", "def forward_boosting(self, x):") + """

class Trainer:
    def __init__(self):
        self.model = Net()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train_epoch(self, loader):
        dist_total = torch.zeros(3)
        for x, y in loader:
            out, dist = self.model.forward_boosting(x)
            dist_total = dist_total + dist
            loss = (out - y).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        print(dist_total)
"""

MAIN = """
import torch
from models import Net


def train(loader):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dist_total = torch.zeros(3)
    for x, y in loader:
        out, dist = model(x)
        dist_total = dist_total + dist
        loss = (out - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(dist_total)
"""

CARRYING = [
    "dist = (out - x).pow(2).mean(1)",  # computed from the output
    "dist = torch.zeros(3).cuda()\n        for i in range(3):\n            dist[i] = (out[i] - x[i]).pow(2).mean()",
]
CLEAN = [
    "dist = (out - x).pow(2).mean(1).detach()",
    "dist = (out - x).pow(2).mean().item()",
    "dist = torch.zeros(3)",
    "dist = torch.zeros(3)\n        for i in range(3):\n            dist[i] = (out[i] - x[i]).pow(2).mean().item()",
    "dist = torch.zeros(3)\n        with torch.no_grad():\n            for i in range(3):\n                dist[i] = (out[i] - x[i]).pow(2).mean()",
]


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


def _fill(template: str, body: str) -> str:
    return textwrap.dedent(template).replace("BODY", body)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("body", CARRYING)
def test_second_output_with_a_graph_is_reported(template: str, body: str) -> None:
    source = _fill(template, body)
    found = _acc002(source)
    assert len(found) == 1
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "dist_total = dist_total + dist" in line)
    assert "graph of `dist`" in found[0].message


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("body", CLEAN)
def test_clean_twins(template: str, body: str) -> None:
    assert _acc002(_fill(template, body)) == []


@pytest.mark.parametrize("body,found", [(CARRYING[1], 1), (CLEAN[3], 0)])
def test_model_in_another_module(tmp_path: Path, body: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "models.py").write_text(_fill(NET, body))
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(MAIN))
    assert len(_acc002(train.read_text(), str(train))) == found
