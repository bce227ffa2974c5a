"""ACC009 on a DDP model wrapped in `main()` and handed to a project trainer's constructor that
stores it with a tuple assignment (`self.model, self.loader, self.accum = model, loader, accum`),
whose method accumulates with `self.model`: reported at the constructor call, with the advice in
the trainer's own name (`self.model.no_sync()`). Silent where the trainer stores the unwrapped
module (`self.model = model.module`) or controls sync. Forms: the trainer in another module and
in the same one."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

MAIN = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from trainer import Trainer


def main(args, model, loader):
    model = DDP(model, device_ids=[args.local_rank])
    trainer = Trainer(model, loader, args.accum)
    trainer.train()
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, accum):
        STORE
        self.optimizer = torch.optim.AdamW(model.parameters())

    def train(self):
        for i, batch in enumerate(self.loader):
            FORWARD
            loss.backward()
            if (i + 1) % self.accum == 0 or i + 1 == len(self.loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

TUPLE = "self.model, self.loader, self.accum = model, loader, accum"
PLAIN_FORWARD = "loss = self.model(batch) / self.accum"


def _trainer(store: str = TUPLE, forward: str = PLAIN_FORWARD) -> str:
    return TRAINER.replace("STORE", store).replace("FORWARD", forward)


def _acc009(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trainer: str) -> list:
    (tmp_path / "trainer.py").write_text(trainer)
    (tmp_path / "train.py").write_text(MAIN)
    monkeypatch.chdir(tmp_path)
    return findings_of(MAIN.encode(), "ACC009", path="train.py")


def test_trainer_in_another_module_stores_the_model_by_tuple(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [finding] = _acc009(tmp_path, monkeypatch, _trainer())
    assert "is handed to `train()` (trainer.py:" in finding.message
    assert "`self.model.no_sync()`" in finding.message
    assert finding.location.row == MAIN.splitlines().index("    trainer = Trainer(model, loader, args.accum)") + 1


def test_trainer_in_the_same_module() -> None:
    source = _trainer() + MAIN.replace("from trainer import Trainer\n", "")
    result = check_source(source.encode(), "t.py")
    assert [f.code for f in result.findings if f.code == "ACC009"] == ["ACC009"]


@pytest.mark.parametrize("store,forward", [
    ("self.model, self.loader, self.accum = model.module, loader, accum", PLAIN_FORWARD),
    (TUPLE, "with self.model.no_sync():\n                loss = self.model(batch) / self.accum"),
])
def test_clean_twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, forward: str) -> None:
    assert _acc009(tmp_path, monkeypatch, _trainer(store, forward)) == []
