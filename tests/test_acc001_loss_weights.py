"""ACC001 tells a weighted loss from a loss divided by the window: terms of one sum scaled by
different numbers written in the code (`0.05 * box + obj + 0.5 * cls`, `ce + 0.1 * aux`) are a
weighted loss, and a weighted loss still owes its division by k. One number applied to the whole
loss (`loss * 0.25`, `loss / 4`) may be 1/k written out and keeps ACC001 silent, as does `* 1.0`
followed by a real division. Script, trainer-class and multi-module forms, with clean twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

LOSS = """
def compute_loss(pred, target):
    box = torch.zeros(1)
    obj = torch.zeros(1)
    box += (pred - target).abs().mean()
    obj += F.mse_loss(pred, target)
    cls = F.l1_loss(pred, target)
    box *= 0.05
    obj *= 1.0
    cls *= 0.5
    loss = {total}
    return loss, torch.cat((box, obj, cls, loss)).detach()
"""

SCRIPT = """
import torch
import torch.nn.functional as F
{loss}

def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss, parts = compute_loss(model(x), y)
        {backward}
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, cfg):
        self.model = model
        self.optimizer = optimizer
        self.accum_steps = cfg.accum_steps

    def loss(self, x, y):
        out = self.model(x)
        return F.cross_entropy(out, y) + {aux}

    def train_epoch(self, loader):
        for i, (x, y) in enumerate(loader):
            loss = self.loss(x, y)
            loss.backward()
            if (i + 1) % self.accum_steps == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

WEIGHTED = "box + obj + cls"


def _script(total: str = WEIGHTED, backward: str = "loss.backward()") -> str:
    loss = textwrap.indent(textwrap.dedent(LOSS.format(total=total)), "")
    return SCRIPT.replace("{loss}", loss).replace("{backward}", backward)


def test_a_sum_of_differently_weighted_terms_still_owes_the_division():
    source = _script()
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]


def test_the_weighted_sum_divided_at_backward_is_clean():
    assert findings(_script(backward="(loss / accum_steps).backward()")) == []


def test_the_weighted_sum_divided_by_k_in_the_helper_is_clean():
    source = _script().replace("accum_steps", "k").replace("def compute_loss(pred, target):", "def compute_loss(pred, target, k=4):")
    source = source.replace("    loss = box + obj + cls", "    loss = (box + obj + cls) / k")
    assert findings(source) == []


@pytest.mark.parametrize("total", ["box * 0.25 + obj * 0.25", "(box + obj + cls) * 0.25", "(box + obj + cls) / 4"])
def test_one_number_scaling_the_whole_loss_may_be_one_over_k_and_stays_silent(total):
    source = _script(total).replace("    box *= 0.05\n", "").replace("    cls *= 0.5\n", "")
    assert findings(source) == []


@pytest.mark.parametrize("aux", ["0.1 * F.mse_loss(out, out.detach() * 0)", "F.mse_loss(out, out.detach() * 0) * 0.1"])
def test_a_trainer_loss_with_a_weighted_auxiliary_term_is_reported(aux):
    source = TRAINER.format(aux=aux)
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]


def test_a_trainer_loss_with_an_equally_weighted_term_stays_silent():
    source = TRAINER.format(aux="F.mse_loss(out, out.detach() * 0)").replace(
        "return F.cross_entropy(out, y) + ", "return 0.5 * F.cross_entropy(out, y) + 0.5 * "
    )
    assert findings(source) == []


def test_the_weighted_loss_in_another_module(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text("import torch\nimport torch.nn.functional as F\n" + textwrap.dedent(LOSS.format(total=WEIGHTED)))
    source = _script().replace(textwrap.dedent(LOSS.format(total=WEIGHTED)), "from losses import compute_loss\n")
    (tmp_path / "train.py").write_text(textwrap.dedent(source).lstrip())
    monkeypatch.chdir(tmp_path)
    assert findings((tmp_path / "train.py").read_text(), "train.py") == [("ACC001", row(source, "loss.backward()"))]
