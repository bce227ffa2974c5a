"""ACC002 and a model method named for the gradients it hands back (`self.net.get_grads()`, the
parameters' `.grad` concatenated): an EWC Fisher estimate that adds their squares up over the data
keeps no graph. The twin adds up what another model method hands back (`get_features()`, read as
a forward pass like any model method) and is reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

EWC = """
import torch
import torch.nn.functional as F


class EWC:
    def __init__(self, net, opt):
        self.net, self.opt = net, opt

    def end_task(self, loader):
        fish = torch.zeros_like(self.net.get_params())
        for inputs, labels in loader:
            for ex, lab in zip(inputs, labels):
                self.opt.zero_grad()
                loss = -F.nll_loss(F.log_softmax(self.net(ex.unsqueeze(0)), 1), lab.unsqueeze(0), reduction="none")
                weight = torch.mean(torch.exp(loss.detach().clone()))
                torch.mean(loss).backward()
                fish += weight * self.net.GETTER() ** 2
        self.fish = fish
"""


@pytest.mark.parametrize("getter", ["get_grads", "flat_grad", "gradients"])
def test_squares_of_the_gradients_keep_no_graph(getter: str) -> None:
    assert findings_of(textwrap.dedent(EWC).replace("GETTER", getter), "ACC002") == []


def test_squares_of_a_model_method_output_are_reported() -> None:
    found = findings_of(textwrap.dedent(EWC).replace("GETTER", "get_features"), "ACC002")
    assert len(found) == 1 and "fish" in found[0].message
