"""ACC004 stays silent on a clip whose mode never runs the GradScaler's backward: `if fp16:
optim.backward(loss)` / `else: scaler.scale(loss).backward()`, then `if fp16:
optim.clip_grad_norm(max_norm)` clips the gradients of the fp16 optimizer's own path, which were
never multiplied by the scaler. A clip in the scaler's mode, or in both, is still reported.
Forms: a script and a trainer class."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(args, model, loader, optim, scaler):
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        if args.fp16 or args.bf16:
            optim.backward(loss)
        else:
            scaler.scale(loss).backward()
        CLIP
        scaler.step(optim)
        scaler.update()
        optim.zero_grad()
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, fp16):
        self.model = model
        self.loader = loader
        self.fp16 = fp16
        self.optim = torch.optim.AdamW(model.parameters())
        self.scaler = torch.cuda.amp.GradScaler()

    def fit(self):
        for x, y in self.loader:
            loss = (self.model(x) - y).pow(2).mean()
            if self.fp16:
                self.optim.backward(loss)
            else:
                self.scaler.scale(loss).backward()
            CLIP
            self.scaler.step(self.optim)
            self.scaler.update()
            self.optim.zero_grad()
"""


def _acc004(source: str) -> list:
    return findings_of(source.encode(), "ACC004", path="train.py")


@pytest.mark.parametrize("clip,reported", [
    ("if args.fp16 or args.bf16:\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", 0),
    ("if not (args.fp16 or args.bf16):\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", 1),
    ("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", 1),
])
def test_script(clip: str, reported: int) -> None:
    source = textwrap.dedent(SCRIPT).replace("CLIP", clip.replace("\n", "\n        "))
    assert len(_acc004(source)) == reported


@pytest.mark.parametrize("clip,reported", [
    ("if self.fp16:\n    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)", 0),
    ("torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)", 1),
])
def test_trainer(clip: str, reported: int) -> None:
    source = textwrap.dedent(TRAINER).replace("CLIP", clip.replace("\n", "\n            "))
    assert len(_acc004(source)) == reported
