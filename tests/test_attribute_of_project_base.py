"""`self.model(batch)` in a trainer whose model is set by a base class of the project, in another
module (`self.model = build_model()` in its `__init__`): a model call, whose loss is fresh and
unscaled, not a method inherited from a library that may do anything. So ACC001 reads the loss
as it does in a one-module trainer. Where the base class sets no such attribute and is built on
a library class, the call stays unknown and the rule silent. Forms: a plain trainer class and a
Lightning module under manual optimisation, each with its twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of

BASE = """
from torch import nn

from {library} import {parent}


class BaseTrainer({parent}):
    def __init__(self, accum):
        super().__init__()
        self.accum = accum
        {model}
"""

TRAINER = """
from base import BaseTrainer


class Trainer(BaseTrainer):
    def train_epoch(self, loader, optimizer):
        for i, batch in enumerate(loader):
            loss = self.model(batch){scale}
            loss.backward()
            if (i + 1) % self.accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
"""

LIGHTNING = """
from base import BaseTrainer


class Module(BaseTrainer):
    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.model(batch){scale}
        self.manual_backward(loss)
        if (batch_idx + 1) % self.accum == 0 or self.trainer.is_last_batch:
            opt.step()
            opt.zero_grad()
"""


def _acc001(tmp_path: Path, child: str, scale: str, model: str, library: str = "torch.nn", parent: str = "Module") -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    base = BASE.replace("{library}", library).replace("{parent}", parent).replace("{model}", model)
    (tmp_path / "base.py").write_text(textwrap.dedent(base))
    path = tmp_path / "child.py"
    path.write_text(textwrap.dedent(child.replace("{scale}", scale)))
    return [f.location.row for f in findings_of(path.read_bytes(), path=str(path), select=("ACC001",))]


def _row(template: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(template).splitlines(), 1) if text in line)


def test_trainer_whose_base_sets_the_model(tmp_path: Path):
    model = "self.model = nn.Linear(4, 1)"
    assert _acc001(tmp_path, TRAINER, "", model) == [_row(TRAINER, "loss.backward()")]
    assert _acc001(tmp_path, TRAINER, " / self.accum", model) == []


def test_lightning_module_whose_base_sets_the_model(tmp_path: Path):
    model = "self.model = build_model()\n        self.automatic_optimization = False"
    found = _acc001(tmp_path, LIGHTNING, "", model, library="lightning", parent="LightningModule")
    assert found == [_row(LIGHTNING, "self.manual_backward(loss)")]
    assert _acc001(tmp_path, LIGHTNING, " / self.accum", model, library="lightning", parent="LightningModule") == []


def test_a_base_that_sets_no_model_on_a_library_class_stays_unknown(tmp_path: Path):
    # `self.model` may be a method the library class defines: what it returns is not in sight.
    assert _acc001(tmp_path, TRAINER, "", "pass", library="transformers", parent="Trainer") == []
