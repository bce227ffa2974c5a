"""A running loss total that is "reset" with an in-place `zero_()` or `fill_(0)` keeps its autograd
chain: the in-place op adds a node whose input is the old graph (under no_grad too), so every
step's graph stays alive (ACC002). Twins: the total is reset by assignment (`total = 0`), or it is
fed `loss.item()`: clean. Forms: a script, a trainer class, and the loop in another module than the
function that builds the total."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, optimizer, loader, log_interval):
    total = torch.zeros(1)
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += VALUE
        if (i + 1) % log_interval == 0:
            print(total.item() / log_interval)
            RESET
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, log_interval):
        self.model = model
        self.optimizer = optimizer
        self.log_interval = log_interval

    def fit(self, loader):
        total = torch.zeros(1)
        for i, (x, y) in enumerate(loader):
            loss = self.model(x, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += VALUE
            if (i + 1) % self.log_interval == 0:
                print(total.item() / self.log_interval)
                RESET
"""

IN_PLACE = ["total.zero_()", "total.fill_(0)"]


def _source(template: str, reset: str, value: str = "loss") -> str:
    return textwrap.dedent(template).replace("RESET", reset).replace("VALUE", value)


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("reset", IN_PLACE)
def test_in_place_zeroing_keeps_the_graph(template: str, reset: str) -> None:
    source = _source(template, reset)
    found = _acc002(source)
    assert len(found) == 1
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "total += loss" in line)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("reset,value", [("total = torch.zeros(1)", "loss"), ("total.zero_()", "loss.item()")])
def test_reassigned_or_fed_numbers(template: str, reset: str, value: str) -> None:
    assert _acc002(_source(template, reset, value)) == []


@pytest.mark.parametrize("value,found", [("loss", 1), ("loss.item()", 0)])
def test_loop_in_another_module(tmp_path: Path, value: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "loops.py").write_text(_source(SCRIPT, "total.zero_()", value))
    main = tmp_path / "main.py"
    main.write_text("from loops import train\n\n\ndef run(model, optimizer, loader):\n    train(model, optimizer, loader, 50)\n")
    assert len(_acc002((tmp_path / "loops.py").read_text(), str(tmp_path / "loops.py"))) == found
    assert _acc002(main.read_text(), str(main)) == []
