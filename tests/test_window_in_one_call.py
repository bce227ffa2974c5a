"""A function that runs a whole accumulation window per call: it zeroes, loops `for j in range(k):`
over slices of its batch (forward and backward there or in a helper), then steps, and a loop in
another function (or module) calls it once per update. Its inner loop is the window, read as the
nanoGPT inner loop is when the outer loop sits in the same function: an undivided loss is ACC001,
a DistributedDataParallel model handed down to it is ACC009 (reported at the call that hands it
over, not at a call under `torch.no_grad()`), and the caller's loop is no ACC012. The inner loop
may rebuild a per-slice state from the batch before each call (`part = [h[s] for h in cache]`):
that is no state carried across micro-steps, unlike `out, h = step(x[t], h)` over time steps,
which stays no window. Twins divide the loss, keep the plain model, or carry the state.
Forms: functions of one script, a trainer class, and a trainer module driven from a launch module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train_batch(model, optimizer, x, y, k):
    optimizer.zero_grad()
    size = x.size(0) // k
    for j in range(k):
        part = slice(j * size, (j + 1) * size)
        loss = torch.nn.functional.mse_loss(model(x[part]), y[part])
        LOSS.backward()
    optimizer.step()


def main(loader, k):
    model = WRAP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        train_batch(model, optimizer, x, y, k)
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, batch_split):
        self.model, self.optimizer, self.batch_split = model, optimizer, batch_split

    def _step(self, x, y, cache, div):
        out, cache = self.model(x, cache)
        loss = torch.nn.functional.nll_loss(out, y)
        (LOSS).backward()
        return loss.item(), cache

    def train_batch(self, x, y, cache):
        self.optimizer.zero_grad()
        if self.batch_split == 1:
            value, cache = self._step(x, y, cache, 1)
        else:
            size = x.size(0) // self.batch_split
            kept = []
            for j in range(self.batch_split):
                part = slice(j * size, (j + 1) * size)
                STATE
                value, part_cache = self._step(x[part], y[part], part_cache, self.batch_split)
                kept.append(part_cache)
        self.optimizer.step()
        return value

    def fit(self, batches, cache):
        for x, y in batches:
            self.train_batch(x, y, cache)
"""
FRESH = "part_cache = [h[part] for h in cache]"
CARRIED = "part_cache = part_cache if j else [h[part] for h in cache]"


def _codes(source: str, **parts: str) -> list[str]:
    text = textwrap.dedent(source)
    for key, value in parts.items():
        text = text.replace(key, value)
    return sorted(f.code for f in findings_of(text.encode(), path="train.py"))


def test_script_window_in_one_call():
    assert _codes(SCRIPT, LOSS="loss", WRAP="DDP") == ["ACC001", "ACC009"]
    assert _codes(SCRIPT, LOSS="(loss / k)", WRAP="DDP") == ["ACC009"]
    assert _codes(SCRIPT, LOSS="(loss / k)", WRAP="") == []
    assert _codes(SCRIPT, LOSS="loss", WRAP="") == ["ACC001"]


def test_trainer_window_with_state_rebuilt_per_slice():
    assert _codes(TRAINER, LOSS="loss", STATE=FRESH) == ["ACC001"]
    assert _codes(TRAINER, LOSS="loss / div", STATE=FRESH) == []
    # a state handed from one call to the next walks time steps: no window, no ACC001
    assert _codes(TRAINER, LOSS="loss", STATE=CARRIED) == []


TRAINER_MODULE = """
import torch


def _train_step(model, x, y, div):
    loss = torch.nn.functional.mse_loss(model(x), y)
    (loss / div).backward()
    return loss.item()


def _train_batch(model, optimizer, x, y, batch_split):
    optimizer.zero_grad()
    size = x.size(0) // batch_split
    for j in range(batch_split):
        part = slice(j * size, (j + 1) * size)
        _train_step(model, x[part], y[part], batch_split)
    optimizer.step()


def train_iteration(model, optimizer, batches, batch_split):
    for x, y in batches:
        _train_batch(model, optimizer, x, y, batch_split)
"""

LAUNCH = """
import torch
from trainer import train_iteration


def launch(model, optimizer, train_batches, valid_batches, batch_split):
    model = torch.nn.parallel.DistributedDataParallel(model)
    GUARD
        train_iteration(model, optimizer, CHOSEN, batch_split)
"""


def test_trainer_module_driven_from_a_launch_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "trainer.py").write_text(TRAINER_MODULE)
    launch = tmp_path / "main.py"
    cases = (
        ("if True:", "train_batches", 1),
        ("with torch.no_grad():", "valid_batches", 0),
    )
    for guard, chosen, expected in cases:
        launch.write_text(textwrap.dedent(LAUNCH).replace("GUARD", guard).replace("CHOSEN", chosen))
        assert len(findings_of(launch.read_bytes(), path=str(launch), select=("ACC009",))) == expected, guard
