"""ACC012 on an optimizer wrapper that a project factory hands back in a tuple (`model, optimizer =
get_model(args, train=True)`, with `return model, ScheduledOptim(...)` on the training path and
`return model` on the other): the wrapper's method (`optimizer.step_and_update_lr(scaler)`) runs
the scaler's step, so calling it on every micro-step while the loss is divided by k is the bug.
The same loop with the step under the accumulation test is clean.
Forms: the factory in the training script, in another module, and in a module named like the
package it imports the wrapper from (`utils/model.py` doing `from model import ScheduledOptim`,
where `model` is the package `model/`, not the module itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

WRAPPER = """
import torch


class ScheduledOptim:
    def __init__(self, model, lr):
        self._optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def step_and_update_lr(self, scaler):
        scaler.step(self._optimizer)

    def zero_grad(self):
        self._optimizer.zero_grad()
"""

FACTORY = """

def get_model(args, train=False):
    model = torch.nn.Linear(4, 4)
    if train:
        optim = ScheduledOptim(model, args.lr)
        return model, optim
    return model
"""

LOOP = """

def train(args, loader):
    model, optimizer = get_model(args, train=True)
    scaler = torch.cuda.amp.GradScaler()
    grad_acc_step = args.grad_acc_step
    for step, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean()
        loss = loss / grad_acc_step
        scaler.scale(loss).backward()
        STEP
"""

EVERY = "optimizer.step_and_update_lr(scaler)\n        scaler.update()\n        optimizer.zero_grad()"
GATED = ("if (step + 1) % grad_acc_step == 0:\n            optimizer.step_and_update_lr(scaler)\n"
         "            scaler.update()\n            optimizer.zero_grad()")


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def test_the_factory_in_the_script() -> None:
    source = WRAPPER + FACTORY + LOOP.replace("STEP", EVERY)
    [finding] = findings_of(source, "ACC012")
    assert finding.location.row == _row(source, "optimizer.step_and_update_lr(scaler)")
    assert "`optimizer.step_and_update_lr(scaler)` runs on every micro-step" in finding.message
    assert findings_of(WRAPPER + FACTORY + LOOP.replace("STEP", GATED), "ACC012") == []


def _project(tmp_path: Path, step: str, package: bool) -> Path:
    (tmp_path / ".git").mkdir()
    if package:  # model/optimizer.py, re-exported by model/__init__.py; the factory in utils/model.py
        (tmp_path / "model").mkdir()
        (tmp_path / "model" / "optimizer.py").write_text(WRAPPER)
        (tmp_path / "model" / "__init__.py").write_text("from .optimizer import ScheduledOptim\n")
        (tmp_path / "utils").mkdir()
        (tmp_path / "utils" / "model.py").write_text("import torch\n\nfrom model import ScheduledOptim\n" + FACTORY)
        head = "import torch\n\nfrom utils.model import get_model\n"
    else:
        (tmp_path / "factory.py").write_text(WRAPPER + FACTORY)
        head = "import torch\n\nfrom factory import get_model\n"
    train = tmp_path / "train.py"
    train.write_text(head + LOOP.replace("STEP", step))
    return train


@pytest.mark.parametrize("package", [False, True])
def test_the_factory_in_another_module(tmp_path: Path, package: bool) -> None:
    train = _project(tmp_path, EVERY, package)
    [finding] = findings_of(train.read_bytes(), "ACC012", path=str(train))
    assert finding.location.row == _row(train.read_text(), "optimizer.step_and_update_lr(scaler)")


@pytest.mark.parametrize("package", [False, True])
def test_the_gated_step_in_another_module_is_clean(tmp_path: Path, package: bool) -> None:
    train = _project(tmp_path, GATED, package)
    assert findings_of(train.read_bytes(), "ACC012", path=str(train)) == []
