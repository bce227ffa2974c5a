"""A batch cut into k micro-batches (`batch.chunk(k)`, `torch.chunk(batch, k)`, also under
`enumerate` or `zip`), each mean loss backpropagated in the inner loop, one step after it: the
gradients add up over k micro-batches, as in nanoGPT's `for micro_step in range(k)`. Undivided, the
update is k times too large (ACC001). Script and trainer-class forms; the twins divide, sum-reduce,
or cut by size (`split(n)`), where the count of micro-batches is not written anywhere."""

from __future__ import annotations

import textwrap

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, loader, optimizer, k):
    for x, y in loader:
        optimizer.zero_grad()
        for xc, yc in {iterable}:
            loss = torch.nn.functional.mse_loss(model(xc), yc{reduction}){divided}
            loss.backward()
        optimizer.step()
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, micro_batches):
        self.model, self.optimizer, self.micro_batches = model, optimizer, micro_batches

    def fit(self, loader):
        for batch in loader:
            self.optimizer.zero_grad()
            for micro in batch.chunk(self.micro_batches):
                loss = self.model(micro).mean()
                loss.backward()
            self.optimizer.step()
"""


def _text(template: str, **parts: str) -> str:
    for key, value in parts.items():
        template = template.replace("{" + key + "}", value)
    return textwrap.dedent(template).lstrip("\n")


def _acc001(text: str) -> list[int]:
    return [f.location.row for f in findings_of(text, "ACC001", path="case.py")]


@pytest.mark.parametrize("iterable", ["zip(x.chunk(k), y.chunk(k))", "zip(torch.chunk(x, k), torch.chunk(y, k))"])
def test_chunks_summed_undivided(iterable):
    text = _text(SCRIPT, iterable=iterable, reduction="", divided="")
    assert _acc001(text) == [9]
    fixed = fix_source(text, "case.py", select={"ACC001"}).fixed_source
    assert fixed is not None and "(loss / k).backward()" in fixed


def test_chunks_in_a_trainer_method():
    assert _acc001(_text(TRAINER)) == [13]


@pytest.mark.parametrize("iterable, reduction, divided", [
    ("zip(x.chunk(k), y.chunk(k))", "", " / k"),  # divided by the count
    ("zip(x.chunk(k), y.chunk(k))", ", reduction='sum'", ""),  # a sum: the batch's scale is the caller's
    ("zip(x.split(64), y.split(64))", "", ""),  # cut by size: how many is not written
    ("zip(x.chunk(k), y.chunk(2))", "", ""),  # two different counts
])
def test_twins(iterable, reduction, divided):
    assert _acc001(_text(SCRIPT, iterable=iterable, reduction=reduction, divided=divided)) == []
