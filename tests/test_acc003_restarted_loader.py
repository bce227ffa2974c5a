"""An iterator restarted when the data runs out (`except StopIteration: loader = iter(train_loader)`)
is carried from one iteration to the next and feeds the forward pass through `next(loader)`, but
it is data, not a model's state: no ACC003. Script and trainer-class forms; the twin carries a
recurrent hidden state the same way and is reported."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

SCRIPT = """
def train(model, optimizer, train_loader, steps):
    loader = iter(train_loader)
    hidden = None
    for _ in range(steps):
        try:
            data = next(loader)
        except StopIteration:
            loader = iter(train_loader)
            data = next(loader)
        {forward}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def train(self, train_loader, steps):
        loader = iter(train_loader)
        hidden = None
        for _ in range(steps):
            try:
                data = next(loader)
            except StopIteration:
                loader = iter(train_loader)
                data = next(loader)
            {forward}
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""

PLAIN = "loss = model(data).mean()"
RECURRENT = "out, hidden = model(data, hidden)\n{indent}loss = out.mean()"


def _source(template: str, forward: str) -> str:
    model = "model" if template is SCRIPT else "self.model"
    indent = " " * (8 if template is SCRIPT else 12)
    return template.replace("{forward}", forward.replace("model", model).replace("{indent}", indent))


def _acc003(source: str) -> list[tuple[str, int]]:
    return [f for f in findings(source) if f[0] == "ACC003"]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_restarted_loader_is_no_carried_state(template):
    assert _acc003(_source(template, PLAIN)) == []


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_hidden_state_beside_it_is_reported(template):
    source = _source(template, RECURRENT)
    assert _acc003(source) == [("ACC003", row(source, "out, hidden ="))]
