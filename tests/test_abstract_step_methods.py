"""A trainer's loop calls `self.forward_propagation(batch)`, a method its own class leaves to
subclasses (it only raises `NotImplementedError`, or is an `@abstractmethod`): the loss it returns
is a subclass's, maybe already divided by k, so its scale is unknown and ACC001 stays silent. The
twin, a concrete method returning an undivided mean loss, is still reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

BASE = """
import abc

import torch


class Trainer{bases}:
    def train(self, model, loader, optimizer):
        for step, batch in enumerate(loader):
            loss = self.forward_propagation(batch, model)
            loss.backward()
            if (step + 1) % self.accumulation_steps == 0 or step + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()

{method}


class LmTrainer(Trainer):
    def forward_propagation(self, batch, model):
        return model(batch).mean() / self.accumulation_steps
"""

RAISES = "    def forward_propagation(self, batch, model):\n        \"\"\"Left to subclasses.\"\"\"\n        raise NotImplementedError"
ABSTRACT = "    @abc.abstractmethod\n    def forward_propagation(self, batch, model):\n        ..."
CONCRETE = "    def forward_propagation(self, batch, model):\n        return model(batch).mean()"


def _acc001(bases: str, method: str) -> list[int]:
    text = textwrap.dedent(BASE).lstrip("\n").replace("{bases}", bases).replace("{method}", method)
    return [f.location.row for f in findings_of(text, "ACC001", path="case.py")]


@pytest.mark.parametrize("bases, method", [("", RAISES), ("(abc.ABC)", ABSTRACT), ("(object)", RAISES)])
def test_a_method_left_to_subclasses_returns_an_unknown_loss(bases, method):
    assert _acc001(bases, method) == []


def test_a_concrete_method_returning_an_undivided_loss_is_still_read():
    assert _acc001("", CONCRETE) == [10]
