"""ACC002 and a `collections.deque(maxlen=n)` filled every iteration: it keeps only its last n
items, so what it holds cannot grow with the run (a visualisation cache of recent outputs), and
no finding is raised. Twins: a deque without a bound (no `maxlen`, or `maxlen=None`) and a list
keep every iteration's graph and are reported. Script and trainer-method forms."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import collections


def train(model, loader, optimizer, history_size):
    cache = BUILT
    for x, y in loader:
        out = model(x)
        loss = (out - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        cache.append({"out": out, "loss": loss})
    return len(cache)
"""

TRAINER = """
import collections


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def fit(self, loader):
        recent = BUILT
        for x, y in loader:
            out = self.model(x)
            loss = (out - y).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            recent.append(out)
        self.show(recent)

    def show(self, recent):
        print(len(recent))
"""


def _found(template: str, built: str) -> int:
    source = textwrap.dedent(template).replace("BUILT", built)
    return len(findings_of(source, "ACC002"))


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize(
    "built", ["collections.deque(maxlen=history_size)", "collections.deque([], 8)", "collections.deque(maxlen=8)"]
)
def test_a_bounded_deque_is_clean(template: str, built: str) -> None:
    assert _found(template, built) == 0


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("built", ["collections.deque()", "collections.deque(maxlen=None)", "[]"])
def test_an_unbounded_store_is_reported(template: str, built: str) -> None:
    assert _found(template, built) == 1
