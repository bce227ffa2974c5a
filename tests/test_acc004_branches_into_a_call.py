"""ACC004 through a called step function after a backward chosen by a setting: `if scaler is not
None: scaler.scale(loss).backward() else: loss.backward()`, then `updater.step(grad_scaler=scaler)`
whose body clips and then steps the scaler. On the AMP branch the clip sees scaled gradients. The
step function in the same module or another one; clean when it unscales before clipping, or when
no branch scales."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

UPDATER = """
import torch


class Updater:
    def __init__(self, network, optimizer, clip):
        self.network, self.optimizer, self.clip = network, optimizer, clip

    def step(self, *, grad_scaler=None):
        {unscale}
        torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.clip)
        if grad_scaler is not None:
            grad_scaler.step(self.optimizer)
            grad_scaler.update()
        else:
            self.optimizer.step()
"""

ENGINE = """
import torch


class Engine:
    def __init__(self, network, optimizer, use_amp, accum):
        self.network = network
        self.updater = Updater(network, optimizer, 1.0)
        self.scaler = torch.cuda.amp.GradScaler() if use_amp else None
        self.accum = accum

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.network(batch).mean() / self.accum
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                {plain_backward}
            if (i + 1) % self.accum == 0:
                self.updater.step(grad_scaler=self.scaler)
                self.updater.optimizer.zero_grad()
"""

NO_UNSCALE = "pass"
UNSCALE = "if grad_scaler is not None:\n            grad_scaler.unscale_(self.optimizer)"


def test_the_amp_branch_reaches_a_clip_in_the_same_module():
    source = UPDATER.format(unscale=NO_UNSCALE) + ENGINE.format(plain_backward="loss.backward()")
    assert ("ACC004", row(source, "clip_grad_norm_")) in findings(source)


def test_an_unscale_before_the_clip_is_clean():
    source = UPDATER.format(unscale=UNSCALE) + ENGINE.format(plain_backward="loss.backward()")
    assert [code for code, _ in findings(source) if code == "ACC004"] == []


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unscale: str) -> list[tuple[str, int]]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "updater.py").write_text(textwrap.dedent(UPDATER.format(unscale=unscale)).lstrip())
    engine = "from updater import Updater\n" + ENGINE.format(plain_backward="loss.backward()")
    (tmp_path / "engine.py").write_text(textwrap.dedent(engine).lstrip())
    monkeypatch.chdir(tmp_path)
    return [f for f in findings((tmp_path / "engine.py").read_text(), "engine.py") if f[0] == "ACC004"]


def test_the_amp_branch_reaches_a_clip_in_another_module(tmp_path, monkeypatch):
    engine = "from updater import Updater\n" + ENGINE.format(plain_backward="loss.backward()")
    assert _project(tmp_path, monkeypatch, NO_UNSCALE) == [("ACC004", row(engine, "self.updater.step("))]


def test_a_clip_in_another_module_after_an_unscale_is_clean(tmp_path, monkeypatch):
    assert _project(tmp_path, monkeypatch, UNSCALE) == []
