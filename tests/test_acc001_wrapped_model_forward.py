"""ACC001 reads the loss a project model's forward returns also when the loop calls the model
through a data-parallel wrapper (`self.model = DistributedDataParallel(self.model)`, `model =
nn.DataParallel(model)`) or when a setup method hands the model back in a tuple (`self.model,
self.trainables = self._setup_models()`): the wrapper runs the wrapped model's forward. A forward
that sums its loss over tokens (`reduction="sum"`) needs no division by k: silent. The same
forward returning a mean is reported, as it is without the wrapper.
Forms: a trainer class, a script, the model in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

MODEL = """
import torch
import torch.nn.functional as F
from torch import nn


class TokenModel(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.proj = nn.Linear(args.dim, args.vocab)

    def forward(self, batch):
        logits = self.proj(batch["x"])
        loss = F.cross_entropy(logits, batch["y"], reduction="REDUCTION")
        return {"loss": loss, "ntokens": batch["y"].numel()}
"""

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, args, rank):
        self.args = args
        self.model, self.trainables = self._setup_models()
        self.optimizer = torch.optim.AdamW(self.trainables, lr=args.lr)
        self.model = DistributedDataParallel(self.model, device_ids=[rank])

    def _setup_models(self):
        model = TokenModel(self.args)
        trainables = [p for p in model.parameters() if p.requires_grad]
        return model, trainables

    def train(self, loader):
        for step, batch in enumerate(loader):
            out = self.model(batch)
            out["loss"].backward()
            if (step + 1) % self.args.gradient_accumulation_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

SCRIPT = """

def main(args, loader):
    model = TokenModel(args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if args.n_gpu > 1:
        model = nn.DataParallel(model)
    for step, batch in enumerate(loader):
        out = model(batch)
        out["loss"].backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _acc001(source: str, path: str = "t.py") -> list:
    return findings_of(source.encode(), "ACC001", path=path)


@pytest.mark.parametrize("loop", [TRAINER, SCRIPT])
def test_a_summed_loss_behind_a_wrapper_is_clean(loop: str) -> None:
    assert _acc001(MODEL.replace("REDUCTION", "sum") + loop) == []


@pytest.mark.parametrize("loop", [TRAINER, SCRIPT])
def test_a_mean_loss_behind_a_wrapper_is_reported(loop: str) -> None:
    source = MODEL.replace("REDUCTION", "mean") + loop
    [finding] = _acc001(source)
    assert finding.location.row == next(i for i, line in enumerate(source.splitlines(), 1) if 'out["loss"].backward()' in line)
    assert "without division by the accumulation steps" in finding.message


@pytest.mark.parametrize("reduction, found", [("sum", 0), ("mean", 1)])
def test_the_wrapped_model_in_another_module(tmp_path: Path, reduction: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "token_model.py").write_text(MODEL.replace("REDUCTION", reduction))
    trainer = tmp_path / "trainer.py"
    trainer.write_text("from token_model import TokenModel\n" + TRAINER)
    assert len(_acc001(trainer.read_text(), str(trainer))) == found
