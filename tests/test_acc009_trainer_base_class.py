"""ACC009 on a DDP model handed to a project trainer whose accumulating loop and whose storing of
the model are in different classes: a subclass with no `__init__` of its own (the base's stores
`self.model`), and a subclass whose `__init__` hands the model to `super().__init__(...)`. The
loop runs in the subclass, the store in the base, each in its own module. Silent where the base
keeps the unwrapped module or the loop controls sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

BASE = """
class BaseTrainer:
    def __init__(self, model, loader, optimizer):
        STORE
        self.loader = loader
        self.optimizer = optimizer
"""

LOOP = """
    def train_epoch(self):
        self.optimizer.zero_grad()
        for i, (x, y) in enumerate(self.loader):
            FORWARD
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(self.loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

INHERITED_INIT = """
from base import BaseTrainer


class Trainer(BaseTrainer):
    k = 4
""" + LOOP

OWN_INIT = """
from base import BaseTrainer


class Trainer(BaseTrainer):
    def __init__(self, model, loader, optimizer, k):
        super().__init__(model, loader, optimizer)
        self.k = k
""" + LOOP

MAIN = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from trainer import Trainer


def main(args, net, loader):
    net = DDP(net, device_ids=[args.local_rank])
    optimizer = torch.optim.AdamW(net.parameters())
    trainer = BUILD
    trainer.train_epoch()
"""

STORED = "self.model = model"
FORWARD = "loss = self.model(x, y) / self.k"
BUILDS = {INHERITED_INIT: "Trainer(net, loader, optimizer)", OWN_INIT: "Trainer(net, loader, optimizer, 4)"}


def _acc009(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trainer: str, store: str = STORED, forward: str = FORWARD) -> list:
    (tmp_path / "base.py").write_text(BASE.replace("STORE", store))
    (tmp_path / "trainer.py").write_text(trainer.replace("FORWARD", forward))
    main = MAIN.replace("BUILD", BUILDS[trainer])
    (tmp_path / "train.py").write_text(main)
    monkeypatch.chdir(tmp_path)
    return findings_of(main.encode(), "ACC009", path="train.py")


@pytest.mark.parametrize("trainer", [INHERITED_INIT, OWN_INIT], ids=["inherited-init", "super-init"])
def test_the_model_stored_by_the_base_runs_in_the_subclass_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trainer: str) -> None:
    [finding] = _acc009(tmp_path, monkeypatch, trainer)
    assert "is handed to `train_epoch()` (trainer.py:" in finding.message
    assert "`self.model.no_sync()`" in finding.message
    assert finding.location.row == MAIN.splitlines().index("    trainer = BUILD") + 1


def test_all_in_one_module() -> None:
    base = BASE.replace("STORE", STORED)
    trainer = OWN_INIT.replace("from base import BaseTrainer\n", "").replace("FORWARD", FORWARD)
    main = MAIN.replace("from trainer import Trainer\n", "").replace("BUILD", BUILDS[OWN_INIT])
    result = check_source((base + trainer + main).encode(), "t.py")
    assert [f.code for f in result.findings if f.code == "ACC009"] == ["ACC009"]


@pytest.mark.parametrize("trainer", [INHERITED_INIT, OWN_INIT], ids=["inherited-init", "super-init"])
@pytest.mark.parametrize("store,forward", [
    ("self.model = model.module", FORWARD),
    (STORED, "with self.model.no_sync():\n                loss = self.model(x, y) / self.k"),
], ids=["unwrapped", "no-sync"])
def test_clean_twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trainer: str, store: str, forward: str) -> None:
    assert _acc009(tmp_path, monkeypatch, trainer, store, forward) == []


def test_a_subclass_keeping_the_inner_module_after_super_init_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = OWN_INIT.replace(
        "        super().__init__(model, loader, optimizer)\n",
        "        super().__init__(model, loader, optimizer)\n        self.model = model.module\n",
    )
    (tmp_path / "base.py").write_text(BASE.replace("STORE", STORED))
    (tmp_path / "trainer.py").write_text(trainer.replace("FORWARD", FORWARD))
    main = MAIN.replace("BUILD", BUILDS[OWN_INIT])
    (tmp_path / "train.py").write_text(main)
    monkeypatch.chdir(tmp_path)
    assert findings_of(main.encode(), "ACC009", path="train.py") == []


LOOP_IN_BASE = """
class BaseTrainer:
    def __init__(self, model, loader, optimizer, k):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.k = k
""" + LOOP.replace("FORWARD", FORWARD)

SUBCLASS = """
from base import BaseTrainer


class Trainer(BaseTrainer):
    OVERRIDE
"""

SYNCED_LOOP = LOOP.replace("FORWARD", "with self.model.no_sync():\n                loss = self.model(x, y) / self.k")


@pytest.mark.parametrize("override,reported", [
    ("k = 4", True),
    (SYNCED_LOOP.strip(), False),
], ids=["inherited-loop", "overridden-loop"])
def test_the_loop_in_the_base_class_runs_unless_the_subclass_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, reported: bool
) -> None:
    (tmp_path / "base.py").write_text(LOOP_IN_BASE)
    (tmp_path / "trainer.py").write_text(SUBCLASS.replace("OVERRIDE", override))
    main = MAIN.replace("BUILD", "Trainer(net, loader, optimizer, 4)")
    (tmp_path / "train.py").write_text(main)
    monkeypatch.chdir(tmp_path)
    assert len(findings_of(main.encode(), "ACC009", path="train.py")) == int(reported)
