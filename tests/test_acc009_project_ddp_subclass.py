"""ACC009 and a DDP class of the project's own (`class DDP(DistributedDataParallel)` with a custom
`forward`), defined in the module or imported from another one, built by a trainer method
(`self.task = self.configure_ddp(self.task)`): it all-reduces as torch's does, so an accumulating
loop without `no_sync()` is reported, and the advice keeps `no_sync()` (the subclass has it).
Clean twins: a project wrapper that is a plain `nn.Module`, and `no_sync()` on non-final steps.
Forms: a script, a trainer class, and the subclass in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SUBCLASS = """
from torch.nn.parallel import DistributedDataParallel


class DDP(DistributedDataParallel):
    def forward(self, *inputs, **kwargs):
        return super().forward(*inputs, **kwargs)
"""

PLAIN = """
from torch import nn


class DDP(nn.Module):
    def __init__(self, module, device_ids=None):
        super().__init__()
        self.module = module
"""

TRAINER = """
class Trainer:
    def __init__(self, task, optimizer, k):
        self.task = task
        self.optimizer = optimizer
        self.k = k

    def configure_ddp(self, task):
        return DDP(task, device_ids=[0])

    def fit(self, loader):
        self.task = self.configure_ddp(self.task)
        for batch_idx, batch in enumerate(loader):
            FORWARD
            if (batch_idx + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

SCRIPT = """
def train(model, optimizer, loader, k):
    model = DDP(model, device_ids=[0])
    for i, batch in enumerate(loader):
        FORWARD
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

BARE = "loss = self.task(batch) / self.k\n            loss.backward()"
SYNCED = (
    "with self.task.no_sync() if (batch_idx + 1) % self.k else contextlib.nullcontext():\n"
    "                loss = self.task(batch) / self.k\n"
    "                loss.backward()"
)


def _acc009(source: str, path: str = "train.py") -> list:
    return findings_of(textwrap.dedent(source).lstrip(), "ACC009", path=path)


@pytest.mark.parametrize("body", [TRAINER, SCRIPT])
def test_a_subclass_in_the_module_is_ddp(body: str) -> None:
    script = BARE.replace("self.task", "model").replace("self.k", "k").replace("\n            ", "\n        ")
    forward = BARE if body is TRAINER else script
    [finding] = _acc009(SUBCLASS + body.replace("FORWARD", forward))
    assert "no_sync()" in finding.message and "has no `no_sync()`" not in finding.message
    assert _acc009(PLAIN + body.replace("FORWARD", forward)) == []


def test_no_sync_on_non_final_steps_is_clean() -> None:
    assert _acc009("import contextlib\n" + SUBCLASS + TRAINER.replace("FORWARD", SYNCED)) == []


def test_the_subclass_imported_from_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    train = tmp_path / "train.py"
    train.write_text("from utils.ddp_utils import DDP\n" + textwrap.dedent(TRAINER.replace("FORWARD", BARE)))
    for definition, expected in ((SUBCLASS, 1), (PLAIN, 0)):
        (tmp_path / "utils" / "ddp_utils.py").write_text(textwrap.dedent(definition).lstrip())
        found = findings_of(train.read_bytes(), "ACC009", path=str(train))
        assert len(found) == expected, definition
