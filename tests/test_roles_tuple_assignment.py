"""Roles read through a tuple assignment of literal values: `self.model, self.opt = DDP(model),
SGD(...)` makes `self.model` a DDP model just as two assignments would, in a trainer class and
in a script. The twins stay clean: the bare model in the tuple, a tuple unpacked from a call
whose results are unknown."""

from __future__ import annotations

import pytest

from tests.snippets import findings as _findings, row as _row

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, model, loader, accum_steps):
        self.model, self.loader, self.accum_steps = {model}, loader, accum_steps
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_epoch(self):
        for step, (x, y) in enumerate(self.loader):
            loss = self.model(x, y) / self.accum_steps
            loss.backward()
            if (step + 1) % self.accum_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def main(net, loader, accum_steps):
    model, optimizer = {model}, torch.optim.SGD(net.parameters(), lr=0.1)
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.mark.parametrize("template, wrapped", [(TRAINER, "DDP(model)"), (SCRIPT, "DDP(net)")])
def test_a_model_wrapped_in_a_tuple_assignment_syncs_every_micro_step(template, wrapped):
    source = template.format(model=wrapped)
    assert [f for f in _findings(source) if f[0] == "ACC009"] == [("ACC009", _row(source, "loss.backward()"))]


@pytest.mark.parametrize(
    "template, bare",
    [(TRAINER, "model"), (SCRIPT, "net"), (SCRIPT, "*make(net)"), (TRAINER, "*make(model)")],
)
def test_the_bare_model_or_unknown_results_are_clean(template, bare):
    assert [f for f in _findings(template.format(model=bare)) if f[0] == "ACC009"] == []
