"""ACC002 on a moving average (`avg = m * avg + (1 - m) * loss`): the old value is carried into the
new one, so each iteration's loss graph is chained to the last, as a running sum chains it. Twins:
the average is fed `loss.item()`. Forms: a script's total, a trainer's attribute, and a meter class
in another module reached through `from utils import *`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
def train(model, loader, optimizer, criterion):
    smooth = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        smooth = 0.98 * smooth + 0.02 * VALUE
    print(float(smooth))
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, criterion):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.ema_loss = 0.0

    def fit(self, loader):
        for x, y in loader:
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.ema_loss = self.ema_loss * 0.9 + 0.1 * VALUE
        print(float(self.ema_loss))
"""

METER = """
class MovingAverageMeter:
    def __init__(self, momentum=0.9):
        self.momentum = momentum
        self.avg = 0

    def update(self, val):
        self.avg = self.momentum * self.avg + (1 - self.momentum) * val
"""

FINETUNE = """
from utils import *


def finetune(model, loader, optimizer, criterion, iterations):
    meter = MovingAverageMeter()
    for step in range(iterations):
        x, y = next(loader)
        loss = criterion(model(x), y)
        meter.update(VALUE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(meter.avg)
"""


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("value,found", [("loss", 1), ("loss.item()", 0)])
def test_a_moving_average_of_the_loss(template: str, value: str, found: int) -> None:
    source = textwrap.dedent(template).replace("VALUE", value)
    reported = _acc002(source)
    assert len(reported) == found
    if found:
        assert reported[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "0.1 * " in line or "0.02 * " in line)


@pytest.mark.parametrize("value,found", [("loss", 1), ("loss.item()", 0)])
def test_a_moving_average_meter_in_another_module(tmp_path: Path, value: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "utils.py").write_text(textwrap.dedent(METER))
    train = tmp_path / "finetuner.py"
    train.write_text(textwrap.dedent(FINETUNE).replace("VALUE", value))
    reported = _acc002(train.read_text(), str(train))
    assert len(reported) == found
    if found:
        assert "MovingAverageMeter.update" in reported[0].message
