"""PyTorch/XLA's `xm.optimizer_step(optimizer)` is the optimizer's step: windows gated on it are
read like `optimizer.step()` ones, in a script, a trainer class, and with the loop in a module
that imports the XLA model module under another name."""

from __future__ import annotations


import pytest

from tests.snippets import findings as _findings, row as _row

SCRIPT = """
import torch_xla.core.xla_model as xm

def train(model, loader, optimizer, k):
    for i, batch in enumerate(loader):
        {early}
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            xm.optimizer_step(optimizer)
            {late}
"""

TRAINER = """
from torch_xla.core import xla_model

class Trainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            {early}
            loss = self.model(batch).mean() / self.k
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                xla_model.optimizer_step(self.optimizer)
                {late}
"""

ALIASED = """
from torch_xla.core.xla_model import optimizer_step as xla_step

def train(model, loader, optimizer, k):
    for i, batch in enumerate(loader):
        {early}
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            xla_step(optimizer)
            {late}
"""






CASES = [(SCRIPT, "optimizer.zero_grad()"), (TRAINER, "self.optimizer.zero_grad()"), (ALIASED, "optimizer.zero_grad()")]


@pytest.mark.parametrize("template, zero", CASES)
def test_zeroing_every_micro_step_before_an_xla_step(template, zero):
    source = template.format(early=zero, late="pass")
    assert _findings(source) == [("ACC007", _row(source, zero))]


@pytest.mark.parametrize("template, zero", CASES)
def test_zeroing_after_the_xla_step_is_clean(template, zero):
    assert _findings(template.format(early="pass", late=zero)) == []


def test_an_unrelated_function_named_optimizer_step_is_no_step():
    source = """
from mytools import optimizer_step

def train(model, loader, optimizer, k):
    for i, batch in enumerate(loader):
        optimizer.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer_step(optimizer)
"""
    assert _findings(source) == []
