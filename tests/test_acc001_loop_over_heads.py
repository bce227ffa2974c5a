"""A loop over the heads or tasks of a multi-task model (`for t in range(len(self.heads)):`
whose body runs `self.heads[t](...)`), backward per task and one step after it, sums the task
losses' gradients on purpose: no accumulation window, so no ACC001. The same loop over
`range(k)` of micro-batches is a window, and its undivided loss is reported. Forms: a trainer
whose step is written out or reached through a method named for it, and a script."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

TRAINER = """
import torch


class MultiTask:
    def __init__(self, model, heads, cfg):
        self.model, self.heads, self.cfg = model, heads, cfg
        self.optimizer = torch.optim.Adam(model.parameters())

    def apply_step(self):
        self.optimizer.step()
        self.optimizer.zero_grad()

    def train_iteration(self, batches):
        for t in LOOP:
            x, y = batches[t]
            loss = (self.heads[HEAD](self.model(x)) - y).pow(2).mean()
            loss.backward()
        STEP
"""

SCRIPT = """
import torch


def train(models, optimizer, batches, k):
    for epoch in range(10):
        for t in LOOP:
            x, y = batches[t]
            loss = (models[HEAD](x) - y).pow(2).mean()
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("step", ["self.apply_step()", "self.optimizer.step()"])
@pytest.mark.parametrize("loop,head,found", [("range(len(self.heads))", "t", 0), ("range(self.cfg.accum_steps)", "0", 1)])
def test_trainer_loop_over_heads(step: str, loop: str, head: str, found: int) -> None:
    source = textwrap.dedent(TRAINER).replace("LOOP", loop).replace("HEAD", head).replace("STEP", step)
    assert len(findings_of(source, "ACC001")) == found


@pytest.mark.parametrize("loop,head,found", [("range(len(models))", "t", 0), ("range(k)", "0", 1)])
def test_script_loop_over_models(loop: str, head: str, found: int) -> None:
    source = textwrap.dedent(SCRIPT).replace("LOOP", loop).replace("HEAD", head)
    assert len(findings_of(source, "ACC001")) == found
