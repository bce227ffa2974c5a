"""A meter chosen by a conditional expression (`losses = SyncedMetric() if distributed else
AverageMeter()`): when one of the choices keeps its argument on the object (`self.sum += val *
n`), a graph-carrying loss handed to `update` leaks on that branch (ACC002), whatever the other
class does. Twins: both choices detach, or the loss handed over is `loss.item()`: clean. Forms: a
script, a trainer class, and the meters in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

METERS = """
class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


class SyncedMetric:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val.detach() * n
        self.count += n
"""

SCRIPT = """
def train_one_epoch(model, optimizer, loader, criterion, distributed):
    losses = SyncedMetric() if distributed else CHOICE()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(VALUE, x.size(0))
    return losses.sum / losses.count
"""

TRAINER = """
class Runner:
    def __init__(self, model, optimizer, criterion, distributed):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.distributed = distributed

    def train_one_epoch(self, loader):
        losses = SyncedMetric() if self.distributed else CHOICE()
        for x, y in loader:
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.update(VALUE, x.size(0))
        return losses.sum / losses.count
"""


def _source(template: str, choice: str = "AverageMeter", value: str = "loss") -> str:
    return textwrap.dedent(METERS) + textwrap.dedent(template).replace("CHOICE", choice).replace("VALUE", value)


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_one_choice_keeps_the_graph(template: str) -> None:
    source = _source(template)
    found = _acc002(source)
    assert len(found) == 1
    assert "AverageMeter.update" in found[0].message
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "losses.update(" in line)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("choice,value", [("SyncedMetric", "loss"), ("AverageMeter", "loss.item()")])
def test_no_choice_keeps_a_graph(template: str, choice: str, value: str) -> None:
    assert _acc002(_source(template, choice, value)) == []


@pytest.mark.parametrize("value,found", [("loss", 1), ("loss.item()", 0)])
def test_meters_in_another_module(tmp_path: Path, value: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "meters.py").write_text(textwrap.dedent(METERS))
    train = tmp_path / "train.py"
    train.write_text("from meters import AverageMeter, SyncedMetric\n" + textwrap.dedent(SCRIPT).replace("CHOICE", "AverageMeter").replace("VALUE", value))
    assert len(_acc002(train.read_text(), str(train))) == found


@pytest.mark.parametrize("choice,found", [("AverageMeter", 1), ("SyncedMetric", 0)])
def test_meters_offered_by_a_package_star_import(tmp_path: Path, choice: str, found: int) -> None:
    """`from utils import AverageMeter` where `utils/__init__.py` gathers `from .meters import *`."""
    (tmp_path / ".git").mkdir()
    package = tmp_path / "utils"
    package.mkdir()
    (package / "__init__.py").write_text("from .meters import *\nfrom .io import *\n")
    (package / "meters.py").write_text(textwrap.dedent(METERS))
    (package / "io.py").write_text("def save(obj, path):\n    return None\n")
    train = tmp_path / "train.py"
    train.write_text("from utils import AverageMeter, SyncedMetric\n" + textwrap.dedent(SCRIPT).replace("CHOICE", choice).replace("VALUE", "loss"))
    assert len(_acc002(train.read_text(), str(train))) == found


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("choice,found", [("AverageMeter", 1), ("SyncedMetric", 0)])
def test_a_nested_choice_is_read_too(template: str, choice: str, found: int) -> None:
    """`A() if c else B() if d else C()`: each of the three classes is read."""
    nested = f"SyncedMetric() if world_size > 8 else {choice}"
    assert len(_acc002(_source(template, nested))) == found
