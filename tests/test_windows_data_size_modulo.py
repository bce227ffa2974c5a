"""A `%` test on the size of a tensor (`if X.size(0) % world_size != 0: continue`, a batch that does
not split evenly across ranks) is no window gate: only a count that advances every micro-step is.
Read as one, it hid the loop's real window and silenced every rule there. And where the gradients
are zeroed at the window's last micro-step before its backward (ACC007), ACC001 says that only one
micro-batch reaches each step today and offers no division. Forms: a script and a trainer class."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, loader, optimizer, k, world_size):
    for j, (X, y) in enumerate(loader):
        if GUARD:
            continue
        ZERO
        loss = LOSS
        loss.backward()
        if (j + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, optimizer, accumulation_steps, world_size):
        self.model, self.loader, self.optimizer = model, loader, optimizer
        self.k, self.world_size = accumulation_steps, world_size

    def fit(self):
        for j, (X, y) in enumerate(self.loader):
            if X.shape[0] % self.world_size:
                continue
            loss = (self.model(X) - y).pow(2).mean()
            loss.backward()
            if (j + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

UNDIVIDED = "(model(X) - y).pow(2).mean()"


def _findings(source: str, code: str) -> list:
    return findings_of(source.encode(), code, path="train.py")


def _script(guard: str = "X.size(0) % world_size != 0", loss: str = UNDIVIDED, zero: str = "pass") -> str:
    return textwrap.dedent(SCRIPT).replace("GUARD", guard).replace("LOSS", loss).replace("ZERO", zero)


@pytest.mark.parametrize("guard", ["X.size(0) % world_size != 0", "X.shape[0] % world_size", "X.numel() % world_size != 0"])
def test_script_size_guard_leaves_the_window_readable(guard: str) -> None:
    found = _findings(_script(guard), "ACC001")
    assert len(found) == 1 and found[0].fix is not None


def test_script_divided_loss_behind_a_size_guard_is_clean() -> None:
    assert _findings(_script(loss=UNDIVIDED + " / k"), "ACC001") == []


def test_trainer_size_guard_leaves_the_window_readable() -> None:
    assert len(_findings(textwrap.dedent(TRAINER), "ACC001")) == 1


def test_zeroing_at_the_windows_last_micro_step_gets_no_division_fix() -> None:
    source = _script(zero="if (j + 1) % k == 0:\n            optimizer.zero_grad()")
    assert len(_findings(source, "ACC007")) == 1
    [finding] = _findings(source, "ACC001")
    assert finding.fix is None and "ACC007" in finding.message
