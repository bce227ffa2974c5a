"""ACC009 on a base class whose loop accumulates with `self.vlm`, where a subclass (a training
strategy per backend) wraps that model in DistributedDataParallel in one of its methods
(`self.vlm = DDP(self.vlm, ...)` in `run_setup`), in the same module or in one that imports the
base: each micro-step all-reduces. Reported at the base loop's backward, naming the subclass.
Silent where the subclass wraps in FSDP, where its module controls sync, where the loop steps on
every batch, and where the loop's method asserts k == 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

BASE = """
import torch


class TrainingStrategy:
    def __init__(self, vlm, grad_accumulation_steps):
        self.vlm, self.grad_accumulation_steps = vlm, grad_accumulation_steps

    def run_setup(self):
        raise NotImplementedError

    def run_training(self, dataloader, epochs):
        PIN
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            for train_idx, batch in enumerate(dataloader):
                loss = self.vlm(**batch).loss
                normalized_loss = loss / self.grad_accumulation_steps
                normalized_loss.backward()
                if GATE:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""

SUBCLASS = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from strategies.base_strategy import TrainingStrategy


class DDPStrategy(TrainingStrategy):
    def run_setup(self):
        self.vlm = WRAP
        self.optimizer = torch.optim.AdamW(self.vlm.parameters())
"""

DDP_WRAP = "DDP(self.vlm, device_ids=[0], gradient_as_bucket_view=True)"
GATED = "(train_idx + 1) % self.grad_accumulation_steps == 0 or train_idx + 1 == len(dataloader)"


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str, subclass: str) -> list:
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies" / "__init__.py").write_text("")
    (tmp_path / "strategies" / "base_strategy.py").write_text(base)
    (tmp_path / "strategies" / "ddp.py").write_text(subclass)
    monkeypatch.chdir(tmp_path)
    return findings_of(base.encode(), "ACC009", path="strategies/base_strategy.py")


def _base(pin: str = "pass", gate: str = GATED) -> str:
    return BASE.replace("PIN", pin).replace("GATE", gate)


def test_subclass_in_another_module_wraps_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [finding] = _project(tmp_path, monkeypatch, _base(), SUBCLASS.replace("WRAP", DDP_WRAP))
    assert "the subclass `DDPStrategy` (ddp.py:10)" in finding.message
    assert "`self.vlm.no_sync()`" in finding.message
    assert finding.location.row == _base().splitlines().index("                normalized_loss.backward()") + 1


def test_subclass_in_the_same_module() -> None:
    subclass = SUBCLASS.replace("WRAP", DDP_WRAP).replace("from strategies.base_strategy import TrainingStrategy\n", "")
    source = _base() + subclass
    result = check_source(source.encode(), "t.py")
    assert [f.code for f in result.findings if "DDPStrategy" in f.message] == ["ACC009"]


@pytest.mark.parametrize("pin,gate,wrap,extra", [
    ("pass", GATED, "FSDP(self.vlm)", "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"),
    ("pass", GATED, DDP_WRAP, "def quiet(model):\n    return model.no_sync()\n"),
    ("pass", "True", DDP_WRAP, ""),
    ("assert self.grad_accumulation_steps == 1", GATED, DDP_WRAP, ""),
])
def test_clean_twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pin: str, gate: str, wrap: str, extra: str) -> None:
    subclass = SUBCLASS.replace("WRAP", wrap) + "\n\n" + extra
    assert _project(tmp_path, monkeypatch, _base(pin, gate), subclass) == []
