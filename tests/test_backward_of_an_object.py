"""A backward called on an object, not a tensor (a ColossalAI `Booster`, a project runner), takes
the loss as an argument: `booster.backward(loss=l / k, optimizer=opt)` or
`runner.backward(l / k, opt)` with `runner = Runner(...)`. The loss read is that argument, never
the object; a tensor's own `backward(gradient)` keeps reading the tensor. Script, trainer-class
and multi-module forms, with twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

SCRIPT = """
from colossalai.booster import Booster


def train(model, loader, optimizer, plugin, accumulation_steps):
    booster = Booster(plugin=plugin)
    model, optimizer, *_ = booster.boost(model, optimizer)
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        {backward}
        if (step + 1) % accumulation_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
from runner import Runner


class Trainer:
    def __init__(self, model, optimizer, cfg):
        self.model, self.optimizer = model, optimizer
        self.k = cfg.accumulation_steps

    def train_epoch(self, loader):
        runner = Runner(self.model)
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean()
            {backward}
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


@pytest.mark.parametrize(
    "backward", ["booster.backward(loss=loss / accumulation_steps, optimizer=optimizer)",
                 "booster.backward(loss / accumulation_steps, optimizer)"],
)
def test_a_divided_loss_handed_to_an_objects_backward_is_clean(backward):
    assert findings(SCRIPT.format(backward=backward)) == []


@pytest.mark.parametrize("backward", ["booster.backward(loss=loss, optimizer=optimizer)", "booster.backward(loss, optimizer)"])
def test_an_undivided_loss_handed_to_an_objects_backward_is_reported(backward):
    source = SCRIPT.format(backward=backward)
    assert findings(source) == [("ACC001", row(source, "booster.backward("))]


@pytest.mark.parametrize("backward, expected", [("loss.backward()", ["ACC001"]), ("(loss / accumulation_steps).backward()", [])])
def test_a_tensors_own_backward_still_reads_the_tensor(backward, expected):
    assert [code for code, _ in findings(SCRIPT.format(backward=backward))] == expected


@pytest.mark.parametrize("divided, expected", [("loss / self.k", []), ("loss", ["ACC001"])])
def test_a_trainer_with_a_project_runner(divided, expected):
    source = TRAINER.format(backward=f"runner.backward({divided}, self.optimizer)")
    assert [code for code, _ in findings(source)] == expected


def test_the_runner_class_in_another_module(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "runner.py").write_text("class Runner:\n    def __init__(self, model):\n        self.model = model\n")
    source = TRAINER.format(backward="runner.backward(loss=loss / self.k, optimizer=self.optimizer)")
    (tmp_path / "train.py").write_text(textwrap.dedent(source).lstrip())
    monkeypatch.chdir(tmp_path)
    assert findings((tmp_path / "train.py").read_text(), "train.py") == []
