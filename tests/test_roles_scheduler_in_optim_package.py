"""A learning-rate scheduler class kept in a project package named `optim`
(`from utils.optim import AnnealingLR`) is a scheduler, read from its class name, not an optimizer
because of the package's name: its `step()` after backward is no optimizer step that needs
zeroing (ACC014). An optimizer class from the same package (`from utils.optim import Adafactor`)
is still an optimizer. Forms: a script whose imports are out of sight, and a project whose package
holds the class."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of

TRAIN = """
import torch
from utils.optim import AnnealingLR


def train(model, loader, num_steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = AnnealingLR(optimizer, base_lr=1e-4, warmup_steps=10, total_steps=num_steps)
    for step, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean()
        ZERO
        loss.backward()
        optimizer.step()
        scheduler.step()
"""

UNZEROED_OPTIMIZER = """
import torch
from utils.optim import Adafactor


def train(model, loader):
    optimizer = Adafactor(model.parameters(), lr=1e-3)
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
"""


def _acc014(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC014", path=path)


def _train(zero: str = "optimizer.zero_grad()") -> str:
    return textwrap.dedent(TRAIN).replace("ZERO", zero)


def test_script_scheduler_from_an_optim_package_is_no_optimizer() -> None:
    assert _acc014(_train()) == []


def test_script_optimizer_from_an_optim_package_is_one() -> None:
    assert len(_acc014(textwrap.dedent(UNZEROED_OPTIMIZER))) == 1
    assert len(_acc014(_train("pass"))) == 1  # the real optimizer, never zeroed, is still read


def test_scheduler_class_in_the_projects_optim_package(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    package = tmp_path / "utils" / "optim"
    package.mkdir(parents=True)
    (tmp_path / "utils" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .lr_scheduler import AnnealingLR\n")
    (package / "lr_scheduler.py").write_text(textwrap.dedent("""
        import math
        from torch.optim.lr_scheduler import _LRScheduler


        class AnnealingLR(_LRScheduler):
            def __init__(self, optimizer, base_lr, warmup_steps, total_steps):
                self.base_lr, self.warmup_steps, self.total_steps = base_lr, warmup_steps, total_steps
                super().__init__(optimizer)

            def get_lr(self):
                return [self.base_lr * 0.5 * (1 + math.cos(math.pi * self.last_epoch / self.total_steps))]
    """))
    train = tmp_path / "train.py"
    train.write_text(_train())
    assert _acc014(train.read_text(), str(train)) == []
