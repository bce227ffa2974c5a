"""ACC002 on an epoch total returned to a caller in another module of the project
(`train_one_epoch()` in `engine.py`, called from `main.py`): the callers are read there, as they
are in the total's own module. A caller that logs the result leaves every iteration's graph held
for the epoch; one that backward-s it needs the graph. Twins: the caller backward-s the result;
nobody calls the function (unknown, silent); the total takes `loss.item()`. Forms: a function called from the
script in the same module, a function of another module, and a trainer's method called from the
script through an instance."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

ENGINE = """
def train_one_epoch(model, loader, optimizer, criterion):
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += VALUE
    return total_loss / len(loader)
"""

MAIN = """
from engine import train_one_epoch


def main(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        USE
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, criterion):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion

    def train_epoch(self, loader):
        total = 0
        for x, y in loader:
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += VALUE
        return total / len(loader)
"""

TRAINER_MAIN = """
from trainer import Trainer


def main(model, optimizer, criterion, loader, epochs):
    trainer = Trainer(model, optimizer, criterion)
    for epoch in range(epochs):
        USE
"""

LOGGED = "train_loss = CALL\n        print(epoch, train_loss)"
BACKWARDED = "train_loss = CALL\n        train_loss.backward()"


def _acc002(path: Path) -> list:
    return findings_of(path.read_bytes(), "ACC002", path=str(path))


def _project(tmp_path: Path, files: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))


def _use(template: str, call: str) -> str:
    return template.replace("CALL", call)


@pytest.mark.parametrize("use,value,found", [
    (LOGGED, "loss", 1),
    (BACKWARDED, "loss", 0),  # the caller needs the graph
    (LOGGED, "loss.item()", 0),
])
def test_function_called_from_another_module(tmp_path: Path, use: str, value: str, found: int) -> None:
    call = "train_one_epoch(model, loader, optimizer, criterion)"
    _project(tmp_path, {"engine.py": ENGINE.replace("VALUE", value), "main.py": MAIN.replace("USE", _use(use, call))})
    findings = _acc002(tmp_path / "engine.py")
    assert len(findings) == found
    if found:
        assert "`total_loss` keeps the autograd graph of `loss`" in findings[0].message


def test_function_nobody_calls_is_silent(tmp_path: Path) -> None:
    _project(tmp_path, {"engine.py": ENGINE.replace("VALUE", "loss")})
    assert _acc002(tmp_path / "engine.py") == []


@pytest.mark.parametrize("use,found", [(LOGGED, 1), (BACKWARDED, 0)])
def test_caller_in_the_same_module(tmp_path: Path, use: str, found: int) -> None:
    main = MAIN.replace("from engine import train_one_epoch\n", "").replace(
        "USE", _use(use, "train_one_epoch(model, loader, optimizer, criterion)")
    )
    _project(tmp_path, {"train.py": ENGINE.replace("VALUE", "loss") + main})
    assert len(_acc002(tmp_path / "train.py")) == found


@pytest.mark.parametrize("use,found", [(LOGGED, 1), (BACKWARDED, 0)])
def test_trainer_method_called_from_the_script(tmp_path: Path, use: str, found: int) -> None:
    _project(tmp_path, {
        "trainer.py": TRAINER.replace("VALUE", "loss"),
        "main.py": TRAINER_MAIN.replace("USE", _use(use, "trainer.train_epoch(loader)")),
    })
    assert len(_acc002(tmp_path / "trainer.py")) == found
