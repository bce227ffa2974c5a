"""ACC001 follows a loss unpacked from a list or a comprehension (`a, b = [crit(o, y) for o, y in
zip(outs, labels)]`, `l1, l2 = [crit(a), crit(b)]`) to the elements that made it: undivided
elements reach backward undivided, and elements divided by k are clean. Script, trainer-class
and multi-module forms, with twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

SCRIPT = """
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, scaler, accum_steps):
    for i, (x, y, z) in enumerate(loader):
        logits = model(x)
        loss_a, loss_b = {unpacked}
        loss = -loss_a + loss_b
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""

COMPREHENSION = "[F.cross_entropy(o, t) for o, t in zip(logits, [y, z])]"
LISTED = "[F.cross_entropy(logits[0], y), F.cross_entropy(logits[1], z)]"


@pytest.mark.parametrize("unpacked", [COMPREHENSION, LISTED])
def test_losses_unpacked_undivided_are_reported(unpacked):
    source = SCRIPT.format(unpacked=unpacked)
    assert findings(source) == [("ACC001", row(source, "scaler.scale(loss).backward()"))]


@pytest.mark.parametrize("unpacked", [
    "[F.cross_entropy(o, t) / accum_steps for o, t in zip(logits, [y, z])]",
    "[F.cross_entropy(logits[0], y) / accum_steps, F.cross_entropy(logits[1], z) / accum_steps]",
])
def test_losses_unpacked_divided_by_k_are_clean(unpacked):
    assert findings(SCRIPT.format(unpacked=unpacked)) == []


def test_unpacked_from_other_values_stays_silent():
    # `losses` is made elsewhere: what its elements are is not in sight
    source = SCRIPT.format(unpacked="[l for l in losses]").replace("def train(model,", "def train(losses, model,")
    assert findings(source) == []


TRAINER = """
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, cfg):
        self.model = model
        self.optimizer = optimizer
        self.accum_steps = cfg.accum_steps

    def losses(self, x, y, z):
        logits = self.model(x)
        first, second = [F.cross_entropy(o, t){divide} for o, t in zip(logits, (y, z))]
        return first + second

    def train_epoch(self, loader):
        for i, (x, y, z) in enumerate(loader):
            loss = self.losses(x, y, z)
            loss.backward()
            if (i + 1) % self.accum_steps == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_a_trainer_method_unpacking_its_losses_is_reported():
    source = TRAINER.format(divide="")
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]


def test_the_trainer_method_dividing_each_loss_is_clean():
    assert findings(TRAINER.format(divide=" / self.accum_steps")) == []


def test_the_unpacking_helper_in_another_module(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text(textwrap.dedent("""
        import torch.nn.functional as F

        def pair_loss(logits, y, z):
            a, b = [F.cross_entropy(o, t) for o, t in zip(logits, (y, z))]
            return -a + b
    """))
    source = SCRIPT.replace("import torch\n", "import torch\nfrom losses import pair_loss\n").format(
        unpacked="pair_loss(logits, y, z), 0.0"
    ).replace("loss = -loss_a + loss_b", "loss = loss_a")
    (tmp_path / "train.py").write_text(textwrap.dedent(source).lstrip())
    monkeypatch.chdir(tmp_path)
    assert findings((tmp_path / "train.py").read_text(), "train.py") == [
        ("ACC001", row(source, "scaler.scale(loss).backward()"))
    ]
