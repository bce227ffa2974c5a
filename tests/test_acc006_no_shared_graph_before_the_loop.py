"""ACC006 and values bound before the loop that hold no graph every iteration shares: an object
of modules from a factory out of sight (`model = build_model()`, then `model.disc(...)`, with
`model.disc.parameters()` handed to an optimizer), a config read with yaml, and a flag that a
conditional expression only tests (`x if flag else None` is `x` or nothing). A `retain_graph=True`
that nothing needs again is still reported. Clean twins: features computed before the loop, which
each iteration's backward runs through again, and a value from an unknown function that feeds
the loss itself.
Forms: a script, a trainer class, and the factory in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch
from factory import build_model


def train(loader, x0):
    model = build_model()
    opt_d = torch.optim.Adam(model.disc.parameters())SHARED
    for x in loader:
        fake = model.gen(x)
        d_loss = model.disc(fake.detach()).mean() - model.disc(LAST).mean()
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
"""

TRAINER = """
import torch
from factory import build_model


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg

    def fit(self, loader, x0):
        nets = build_model(self.cfg)
        nets.train()
        opt = torch.optim.AdamW(nets.disc.parameters())SHARED
        for x in loader:
            loss = nets.disc(LAST).mean()
            opt.zero_grad()
            loss.backward(retain_graph=True)
            opt.step()
"""

def _acc006(source: str, path: str = "train.py") -> list:
    return findings_of(textwrap.dedent(source).lstrip(), "ACC006", path=path)


@pytest.mark.parametrize("template,indent", [(SCRIPT, "    "), (TRAINER, "        ")])
def test_an_object_of_modules_is_no_shared_graph(template: str, indent: str) -> None:
    [finding] = _acc006(template.replace("SHARED", "").replace("LAST", "x"))
    assert "no later backward" in finding.message
    shared = "\n" + indent + "feats = " + ("model" if template is SCRIPT else "nets") + ".enc(x0)"
    assert _acc006(template.replace("SHARED", shared).replace("LAST", "feats")) == []


def test_the_factory_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "factory.py").write_text(textwrap.dedent("""
        from munch import Munch


        def build_model(cfg=None):
            return Munch(gen=make_generator(cfg), disc=make_discriminator(cfg))
    """).lstrip())
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(SCRIPT.replace("SHARED", "").replace("LAST", "x")).lstrip())
    [finding] = findings_of(train.read_bytes(), "ACC006", path=str(train))
    assert "no later backward" in finding.message


SETTINGS = """
import torch
import yaml
from factory import build_model, load_flag


def train(loader, path):
    config = yaml.safe_load(open(path))
    flag = load_flag(path)
    model = build_model()
    opt_d = torch.optim.Adam(model.disc.parameters())
    for x in loader:
        d_loss = model.disc(x, config["scale"]).mean() - model.disc(USED).mean()
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
"""


def test_a_yaml_config_and_a_tested_flag_hold_no_graph() -> None:
    [finding] = _acc006(SETTINGS.replace("USED", "x if flag else x.flip(0)"))
    assert "no later backward" in finding.message
    assert _acc006(SETTINGS.replace("USED", "x * flag")) == []  # `flag` may be a tensor the graphs share
