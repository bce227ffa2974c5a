"""ACC014 with two optimizers: one is zeroed every iteration, the other never is (a GAN whose
generator's gradients add up over all its updates). Reported only when every zeroing in sight
is `<optimizer>.zero_grad()` on a named optimizer; a model's zero_grad, a helper that zeroes, a
weight-averaging "optimizer" or one built by an unknown class keep it silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings as _findings, row as _row

SCRIPT = """
import torch

def train(gen, disc, loader):
    opt_g = torch.optim.Adam(gen.parameters())
    opt_d = torch.optim.Adam(disc.parameters())
    for x in loader:
        opt_d.zero_grad()
        d_loss = disc(x).mean()
        d_loss.backward()
        opt_d.step()
        {zero_g}
        g_loss = -disc(gen(x)).mean()
        g_loss.backward()
        opt_g.step()
"""

TRAINER = """
class GANTrainer:
    def __init__(self, gen, disc, opt_g, opt_d):
        self.gen, self.disc, self.opt_g, self.opt_d = gen, disc, opt_g, opt_d

    def train_epoch(self, loader):
        for x in loader:
            self.opt_d.zero_grad()
            self.disc(x).mean().backward()
            self.opt_d.step()
            {zero_g}
            (-self.disc(self.gen(x)).mean()).backward()
            self.opt_g.step()
"""






@pytest.mark.parametrize("template, step", [(SCRIPT, "opt_g.step()"), (TRAINER, "self.opt_g.step()")])
def test_the_optimizer_that_is_never_zeroed(template, step):
    source = template.format(zero_g="pass")
    assert _findings(source) == [("ACC014", _row(source, step))]
    message = engine.check_source(textwrap.dedent(source).lstrip(), "t.py").findings[0].message
    assert "only `" in message and "opt_d` is zeroed" in message


@pytest.mark.parametrize(
    "template, zero",
    [(SCRIPT, "opt_g.zero_grad()"), (SCRIPT, "gen.zero_grad()"), (TRAINER, "self.opt_g.zero_grad()"), (TRAINER, "self.gen.zero_grad()")],
)
def test_both_zeroed_is_clean(template, zero):
    assert _findings(template.format(zero_g=zero)) == []


def test_a_helper_in_another_module_that_zeroes_keeps_it_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "tools.py").write_text("def reset(model):\n    for p in model.parameters():\n        p.grad = None\n")
    for call, expected in [("reset(self.gen)", []), ("pass", ["ACC014"])]:
        source = "from tools import reset\n\n" + textwrap.dedent(TRAINER).lstrip().format(zero_g=call)
        (tmp_path / "train.py").write_text(source)
        monkeypatch.chdir(tmp_path)
        assert [code for code, _ in _findings(source, "train.py")] == expected


def test_a_weight_averaging_step_reads_no_gradient():
    source = """
import torch

def train(model, ema_model, loader, ema_optimizer):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()
        ema_optimizer.step()
"""
    assert _findings(source) == []


def test_an_object_built_by_an_unknown_class_is_not_taken_for_an_optimizer():
    source = """
import torch
from mylib import Averager

def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    opt_slow = Averager(model)
    for x in loader:
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()
        opt_slow.step()
"""
    assert _findings(source) == []


JOINT_SCRIPT = """
import itertools
import torch

def train(gen, disc, head, loader):
    opt_g = torch.optim.Adam(gen.parameters())
    opt_d = torch.optim.Adam(disc.parameters())
    opt_info = torch.optim.Adam(itertools.chain({models}))
    for x in loader:
        opt_d.zero_grad()
        disc(x).mean().backward()
        opt_d.step()
        opt_g.zero_grad()
        (-disc(gen(x)).mean()).backward()
        opt_g.step()
        head(disc(gen(x))).mean().backward()
        opt_info.step()
"""

JOINT_TRAINER = """
import itertools
import torch

class InfoGAN:
    def __init__(self, gen, disc, head):
        self.gen, self.disc, self.head = gen, disc, head
        self.opt_g = torch.optim.Adam(self.gen.parameters())
        self.opt_d = torch.optim.Adam(self.disc.parameters())
        self.opt_info = torch.optim.Adam(itertools.chain({models}))

    def train(self, loader):
        for x in loader:
            self.opt_d.zero_grad()
            self.disc(x).mean().backward()
            self.opt_d.step()
            self.opt_g.zero_grad()
            (-self.disc(self.gen(x)).mean()).backward()
            self.opt_g.step()
            self.head(self.disc(self.gen(x))).mean().backward()
            self.opt_info.step()
"""


@pytest.mark.parametrize(
    "template, covered, uncovered, step",
    [
        (JOINT_SCRIPT, "gen.parameters(), disc.parameters()", "gen.parameters(), head.parameters()", "opt_info.step()"),
        (
            JOINT_TRAINER,
            "self.gen.parameters(), self.disc.parameters()",
            "self.gen.parameters(), self.head.parameters()",
            "self.opt_info.step()",
        ),
    ],
)
def test_an_optimizer_over_models_the_others_zero(template, covered, uncovered, step):
    """An optimizer over the parameters of models that the zeroed optimizers hold has its
    gradients cleared by their zero_grad; one over a model nobody zeroes keeps its finding."""
    assert _findings(template.format(models=covered)) == []
    source = template.format(models=uncovered)
    assert _findings(source) == [("ACC014", _row(source, step))]
