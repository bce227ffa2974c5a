"""A window test passed to the function that steps (`loss_scaler(loss, opt, update_grad=(i + 1) %
k == 0)`, a NativeScaler-style object whose `__call__` runs backward and steps only when told):
the loop's window is read from the argument. The object is known from `x = Cls()` in sight,
`self.x = Cls()`, or, for a parameter, from every call in the module passing an instance of the
same class. Script, trainer-class and multi-module forms, with their clean twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings as _findings, row as _row

SCALER = """
import torch

class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, parameters=None, update_grad=True):
        self._scaler.scale(loss).backward()
        if update_grad:
            self._scaler.step(optimizer)
            self._scaler.update()
            optimizer.zero_grad()
"""

SCRIPT = SCALER + """

def train(model, loader, optimizer, k):
    loss_scaler = NativeScaler()
    for i, batch in enumerate(loader):
        {zero}
        loss = model(batch).mean() / k
        loss_scaler(loss, optimizer, update_grad={test})
"""

TRAINER = SCALER + """

class Trainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k
        self.loss_scaler = NativeScaler()

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            {zero}
            loss = self.model(batch).mean() / self.k
            self.loss_scaler(loss, self.optimizer, update_grad={test})
"""

DRIVER = """
from scaler import NativeScaler


def train_one_epoch(model, loader, optimizer, loss_scaler, k):
    running = 0.0
    for i, batch in enumerate(loader):
        {zero}
        loss = model(batch).mean() / k
        loss_scaler(loss, optimizer, update_grad={test})
        running += loss.item()
    return running


def main(model, loader, optimizer, args):
    loss_scaler = NativeScaler()
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, loss_scaler, args.k)
"""

BOUNDARY = {"script": "(i + 1) % k == 0", "trainer": "(i + 1) % self.k == 0"}






def _in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: str) -> list[tuple[str, int]]:
    (tmp_path / "scaler.py").write_text(textwrap.dedent(SCALER).lstrip())
    (tmp_path / "train.py").write_text(textwrap.dedent(driver).lstrip())
    monkeypatch.chdir(tmp_path)
    return _findings((tmp_path / "train.py").read_text(), "train.py")


@pytest.mark.parametrize("template, boundary", [(SCRIPT, BOUNDARY["script"]), (TRAINER, BOUNDARY["trainer"])])
def test_a_window_test_passed_as_an_argument_without_an_end_clause(template, boundary):
    source = template.format(zero="pass", test=boundary)
    assert _findings(source) == [("ACC005", _row(source, "update_grad=", last=True))]


@pytest.mark.parametrize("template, boundary", [(SCRIPT, BOUNDARY["script"]), (TRAINER, BOUNDARY["trainer"])])
def test_the_passed_test_with_an_end_clause_is_clean(template, boundary):
    assert _findings(template.format(zero="pass", test=f"{boundary} or i + 1 == len(loader)")) == []


@pytest.mark.parametrize(
    "template, boundary, zero",
    [(SCRIPT, BOUNDARY["script"], "optimizer.zero_grad()"), (TRAINER, BOUNDARY["trainer"], "self.optimizer.zero_grad()")],
)
def test_zeroing_every_micro_step_while_the_callee_steps_when_told(template, boundary, zero):
    source = template.format(zero=zero, test=f"{boundary} or i + 1 == len(loader)")
    assert _findings(source) == [("ACC007", _row(source, zero, last=True))]


def test_a_parameter_every_caller_fills_with_the_scaler(tmp_path, monkeypatch):
    bad = DRIVER.format(zero="pass", test="(i + 1) % k == 0")
    assert _in_project(tmp_path, monkeypatch, bad) == [("ACC005", _row(bad, "update_grad=", last=True))]
    good = DRIVER.format(zero="pass", test="(i + 1) % k == 0 or i + 1 == len(loader)")
    assert _in_project(tmp_path, monkeypatch, good) == []


def test_a_parameter_some_caller_fills_with_something_else_is_not_followed(tmp_path, monkeypatch):
    driver = DRIVER.format(zero="optimizer.zero_grad()", test="(i + 1) % k == 0 or i + 1 == len(loader)")
    driver += "\n\ndef other(model, loader, optimizer, scaler_from_elsewhere):\n    train_one_epoch(model, loader, optimizer, scaler_from_elsewhere, 2)\n"
    assert _in_project(tmp_path, monkeypatch, driver) == []


def test_a_step_told_by_a_flag_that_is_always_true_is_no_window():
    source = SCRIPT.format(zero="optimizer.zero_grad()", test="True")
    assert _findings(source) == []


def test_a_driver_whose_only_training_word_is_the_loss_is_still_analysed(tmp_path, monkeypatch):
    # No backward, no step, no accumulation in the file's text: the loop hands its loss to a
    # project object that runs them.
    driver = """
from scaler import NativeScaler


def train_one_epoch(model, loader, opt, loss_scaler, k):
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        loss_scaler(loss, opt, update_grad=(i + 1) % k == 0)


def main(model, loader, opt, args):
    loss_scaler = NativeScaler()
    train_one_epoch(model, loader, opt, loss_scaler, args.k)
"""
    assert _in_project(tmp_path, monkeypatch, driver) == [("ACC005", _row(driver, "update_grad=", last=True))]
