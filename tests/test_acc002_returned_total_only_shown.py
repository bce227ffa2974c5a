"""ACC002 on a running total a function returns when every caller only prints or logs the result
(`print(train_epoch(...))`, `logger.info(f"{train_epoch(...):.3f}")`): shown and thrown away, it
is never differentiated, so the total that kept every batch's graph is reported as when the
caller assigns it and only logs it. A caller that differentiates it (`train_epoch(...).backward()`,
even inside a print) keeps the rule silent. Forms: a script, a trainer class, and the training
function in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

TRAIN_EPOCH = """
import torch


def train_epoch(model, loader, opt):
    total = 0
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss
    return total / len(loader)
"""

MAIN = """
def main(model, loader, opt, epochs):
    for epoch in range(epochs):
        CALLER
"""

TRAINER = """
import logging

import torch

logger = logging.getLogger(__name__)


class Trainer:
    def __init__(self, model, loader, opt):
        self.model, self.loader, self.opt = model, loader, opt

    def train_epoch(self):
        total = 0
        for x, y in self.loader:
            loss = (self.model(x) - y).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += loss
        return total / len(self.loader)

    def fit(self, epochs):
        for epoch in range(epochs):
            CALLER
"""

SHOWN = [
    "print(train_epoch(model, loader, opt))",
    'print(f"epoch {epoch}: {train_epoch(model, loader, opt):.3f}")',
    "print(epoch, 1.0 * train_epoch(model, loader, opt))",
]
DIFFERENTIATED = [
    "print(train_epoch(model, loader, opt).backward())",
    "train_epoch(model, loader, opt).backward()",
]


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


def _script(caller: str) -> str:
    return textwrap.dedent(TRAIN_EPOCH) + textwrap.dedent(MAIN).replace("CALLER", caller)


@pytest.mark.parametrize("caller", SHOWN)
def test_script_total_only_shown_is_reported(caller: str) -> None:
    source = _script(caller)
    found = _acc002(source)
    assert [f.location.row for f in found] == [source.splitlines().index("        total += loss") + 1]


@pytest.mark.parametrize("caller", DIFFERENTIATED)
def test_script_total_differentiated_by_the_caller_is_clean(caller: str) -> None:
    assert _acc002(_script(caller)) == []


@pytest.mark.parametrize("caller,found", [
    ('logger.info(f"epoch {epoch}: {self.train_epoch():.3f}")', 1),
    ("self.train_epoch().backward()", 0),
])
def test_trainer(caller: str, found: int) -> None:
    assert len(_acc002(textwrap.dedent(TRAINER).replace("CALLER", caller))) == found


@pytest.mark.parametrize("caller,found", [(SHOWN[0], 1), (DIFFERENTIATED[1], 0)])
def test_training_function_in_another_module(tmp_path: Path, caller: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    engine = tmp_path / "engine.py"
    engine.write_text(textwrap.dedent(TRAIN_EPOCH))
    (tmp_path / "main.py").write_text("from engine import train_epoch\n" + textwrap.dedent(MAIN).replace("CALLER", caller))
    assert len(_acc002(engine.read_text(), str(engine))) == found
