"""A per-label loss averaged over the labels and multiplied back by their count (`loss *
cfg.num_labels`, the VQA soft-score idiom) is a per-sample sum: it is not divided by any window,
so accumulating it undivided is ACC001. Twins: the same loss divided by the window, or multiplied
by a name that may be `1 / k` (`loss * scale`): silent. Forms: a script, a trainer class, and the
loss helper in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
def train(model, optimizer, loader, cfg, scale, n_classes):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y).mean()
        loss = LOSS
        loss.backward()
        if (step + 1) % cfg.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, cfg, scale, n_classes):
        self.model = model
        self.optimizer = optimizer
        self.cfg = cfg
        self.scale = scale
        self.n_classes = n_classes

    def train(self, loader):
        cfg, scale, n_classes = self.cfg, self.scale, self.n_classes
        for step, (x, y) in enumerate(loader):
            loss = self.model(x, y).mean()
            loss = LOSS
            loss.backward()
            if (step + 1) % cfg.gradient_accumulation_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

HELPER = """
def instance_bce(logits, labels, num_classes):
    loss = (logits - labels).pow(2).mean()
    return loss * num_classes
"""

HELPER_SCRIPT = """
def train(model, optimizer, loader, cfg):
    for step, (x, y) in enumerate(loader):
        loss = instance_bce(model(x), y, cfg.num_classes)
        loss = SCALED
        loss.backward()
        if (step + 1) % cfg.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _acc001(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC001", path=path)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("loss", ["loss.float() * cfg.num_labels", "cfg.num_labels * loss", "loss * n_classes"])
def test_loss_times_its_label_count_is_undivided(template: str, loss: str) -> None:
    source = textwrap.dedent(template).replace("LOSS", loss)
    found = _acc001(source)
    assert len(found) == 1
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "loss.backward()" in line)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("loss", [
    "loss * cfg.num_labels / cfg.gradient_accumulation_steps",
    "loss * scale",
    "loss * cfg.num_labels * scale",
])
def test_divided_or_scaled_by_an_unknown_name(template: str, loss: str) -> None:
    assert _acc001(textwrap.dedent(template).replace("LOSS", loss)) == []


@pytest.mark.parametrize("scaled,found", [("loss", 1), ("loss / cfg.gradient_accumulation_steps", 0)])
def test_label_count_in_a_helper_of_another_module(tmp_path: Path, scaled: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text(textwrap.dedent(HELPER))
    train = tmp_path / "train.py"
    train.write_text("from losses import instance_bce\n" + textwrap.dedent(HELPER_SCRIPT).replace("SCALED", scaled))
    assert len(_acc001(train.read_text(), str(train))) == found
