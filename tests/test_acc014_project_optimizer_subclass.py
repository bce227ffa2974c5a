"""ACC014 on an optimizer the project builds on one of torch's (`class BertAdam(Optimizer)` with a
`step()` of its own): it inherits torch's `zero_grad()`, so it is the optimizer itself, not a
wrapper around one. The advice and the fix add `optimizer.zero_grad()` after its step, as for
torch's optimizers. A project class that holds an optimizer (`self.optimizer = ...`) is still a
wrapper: its advice asks for the zeroing in its `step()`, and no fix is offered. Forms: the class in
another module and in the same one."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source

OPTIMIZER = """
import torch
from torch.optim import Optimizer


class BertAdam(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data.add_(p.grad.data, alpha=-group["lr"])
"""

WRAPPER = """
import torch


class BertAdam:
    def __init__(self, params, lr=1e-3):
        self.optimizer = torch.optim.SGD(params, lr=lr)

    def step(self):
        self.optimizer.step()
"""

LOOP = """

def train(model, loader, loss_fn):
    optimizer = BertAdam(model.parameters())
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
"""


def _acc014(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, optimizer: str) -> list:
    (tmp_path / ".git").mkdir()
    (tmp_path / "optim.py").write_text(optimizer)
    source = "from optim import BertAdam\n" + LOOP
    (tmp_path / "train.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    result = check_source(source.encode(), str(tmp_path / "train.py"))
    return [f for f in result.findings if f.code == "ACC014"]


def test_a_subclass_of_torch_optimizer_is_advised_and_fixed_as_torch_optimizers_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [finding] = _acc014(tmp_path, monkeypatch, OPTIMIZER)
    assert "add `optimizer.zero_grad()` after the step" in finding.message
    assert finding.fix is not None


def test_the_subclass_in_the_same_module() -> None:
    [finding] = [f for f in check_source((OPTIMIZER + LOOP).encode(), "train.py").findings if f.code == "ACC014"]
    assert "add `optimizer.zero_grad()` after the step" in finding.message


def test_a_class_holding_an_optimizer_is_still_a_wrapper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [finding] = _acc014(tmp_path, monkeypatch, WRAPPER)
    assert "zero the wrapped optimizer's gradients" in finding.message
    assert finding.fix is None
