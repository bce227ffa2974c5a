"""ACC001 reads the loss's scale from the code:
- a sum over the samples (`reduction="sum"`, a criterion built with it, a project function that
  returns one) owes no division by k: summed over the window it is the full batch's sum;
- while gradients are zeroed every micro-step (ACC007) the undivided loss is reported with no
  `/ k` fix and a message saying what happens once the zeroing moves; `--fix` then fixes both
  in order. Script, trainer-class and multi-module forms, with their twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import codes, findings, row

SCRIPT = """
import torch.nn.functional as F

def train(model, loader, optimizer, k):
    for i, (x, y) in enumerate(loader):
        {zero}
        loss = F.cross_entropy(model(x), y{reduction})
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
from torch import nn

class Trainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k
        self.criterion = nn.CrossEntropyLoss({reduction_only})

    def train_epoch(self, loader):
        for i, (x, y) in enumerate(loader):
            {zero}
            loss = self.criterion(self.model(x), y)
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _script(reduction: str, zero: str = "pass") -> str:
    return SCRIPT.format(zero=zero, reduction=f", reduction={reduction!r}" if reduction else "")


def _trainer(reduction: str, zero: str = "pass") -> str:
    return TRAINER.format(zero=zero, reduction_only=f"reduction={reduction!r}" if reduction else "")


@pytest.mark.parametrize("build", [_script, _trainer])
def test_a_sum_over_the_samples_owes_no_division(build):
    assert codes(build("sum")) == []


@pytest.mark.parametrize("build", [_script, _trainer])
@pytest.mark.parametrize("reduction", ["", "mean"])
def test_a_mean_is_still_reported(build, reduction):
    assert codes(build(reduction)) == ["ACC001"]


def test_a_project_function_returning_a_summed_loss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for reduction, expected in [("sum", []), ("mean", ["ACC001"])]:
        (tmp_path / "losses.py").write_text(
            f"import torch.nn.functional as F\n\n\ndef task_loss(out, y):\n    return F.mse_loss(out, y, reduction={reduction!r})\n"
        )
        source = textwrap.dedent("""
            from losses import task_loss

            def train(model, loader, optimizer, k):
                for i, (x, y) in enumerate(loader):
                    loss = task_loss(model(x), y)
                    loss.backward()
                    if (i + 1) % k == 0 or i + 1 == len(loader):
                        optimizer.step()
                        optimizer.zero_grad()
        """).lstrip()
        (tmp_path / "train.py").write_text(source)
        monkeypatch.chdir(tmp_path)
        assert codes(source, "train.py") == expected


@pytest.mark.parametrize(
    "build, zero", [(_script, "optimizer.zero_grad()"), (_trainer, "self.optimizer.zero_grad()")]
)
def test_undivided_loss_while_zeroing_every_micro_step(build, zero):
    source = build("", zero)
    assert findings(source) == sorted([("ACC007", row(source, zero)), ("ACC001", row(source, "loss.backward()"))])
    result = engine.check_source(textwrap.dedent(source).lstrip(), "t.py")
    acc001 = next(f for f in result.findings if f.code == "ACC001")
    assert acc001.fix is None
    assert "once the zeroing" in acc001.message and "(ACC007)" in acc001.message
    fixed = engine.fix_source(textwrap.dedent(source).lstrip(), "t.py").fixed_source
    assert isinstance(fixed, str) and codes(fixed) == []
    assert "/ " in fixed.split("backward()")[0].splitlines()[-1]  # the backward's loss is divided now
