"""A GradScaler built switched off (`GradScaler(enabled=False)`) leaves the loss and gradients as
they are and records nothing: clipping after its backward clips true gradients (no ACC004), and its
`update()` on every micro-step raises nothing (no ACC008). A scaler switched by a setting
(`enabled=args.amp`), on by default, or bound elsewhere too is still read as a scaler. Forms: a
script and a trainer class."""

from __future__ import annotations

import pytest

from tests.snippets import codes

SCRIPT = """
import torch


def train(model, loader, optimizer, k, args):
    scaler = torch.cuda.amp.GradScaler(SWITCH)
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / k
        scaler.scale(loss).backward()
        scaler.update()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            optimizer.zero_grad()
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, k, args):
        self.model, self.optimizer, self.k = model, optimizer, k
        self.scaler = torch.amp.GradScaler("cuda", SWITCH)

    def fit(self, loader):
        for i, (x, y) in enumerate(loader):
            loss = self.model(x, y) / self.k
            self.scaler.scale(loss).backward()
            self.scaler.update()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.scaler.step(self.optimizer)
                self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("form", [SCRIPT, TRAINER])
def test_scaler_built_switched_off_neither_clips_scaled_gradients_nor_raises(form: str) -> None:
    found = codes(form.replace("SWITCH", "enabled=False"))
    assert "ACC004" not in found and "ACC008" not in found


@pytest.mark.parametrize("form", [SCRIPT, TRAINER])
@pytest.mark.parametrize("switch", ["enabled=True", "enabled=args.amp", ""])
def test_scaler_that_may_be_on_is_still_read(form: str, switch: str) -> None:
    found = codes(form.replace("SWITCH", switch).replace('"cuda", )', '"cuda")'))
    assert "ACC004" in found and "ACC008" in found


def test_scaler_rebound_to_an_enabled_one_is_still_read() -> None:
    source = SCRIPT.replace("SWITCH", "enabled=False").replace(
        "    for i, (x, y)", "    if args.amp:\n        scaler = torch.cuda.amp.GradScaler()\n    for i, (x, y)"
    )
    found = codes(source)
    assert "ACC004" in found and "ACC008" in found
