"""ACC001 follows a loss through apex's `with amp.scale_loss(loss, optimizer) as scaled_loss:`:
the context multiplies the loss by the loss scale and apex takes that scale off the gradients
again, so `scaled_loss` is as divided by the window as `loss` is. Script and trainer-class forms,
each with the divided twin, which stays clean."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

SCRIPT = """
from apex import amp


def train(model, optimizer, loader, opts):
    for step, batch in enumerate(loader):
        loss = model(batch).mean(){division}
        delay_unscale = (step + 1) % opts.gradient_accumulation_steps != 0
        with amp.scale_loss(loss, optimizer, delay_unscale=delay_unscale) as scaled_loss:
            scaled_loss.backward()
        if (step + 1) % opts.gradient_accumulation_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
from apex import amp


class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self.model, self.optimizer, self.accum_steps = model, optimizer, accum_steps

    def backward(self, loss):
        with amp.scale_loss(loss, self.optimizer) as scaled_loss:
            scaled_loss.backward()

    def fit(self, loader):
        for step, batch in enumerate(loader):
            loss = self.model(batch).mean(){division}
            self.backward(loss)
            if (step + 1) % self.accum_steps == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

DIVISION = {SCRIPT: " / opts.gradient_accumulation_steps", TRAINER: " / self.accum_steps"}


def _acc001(source: str) -> list[tuple[str, int]]:
    return [f for f in findings(source) if f[0] == "ACC001"]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_an_undivided_loss_scaled_by_apex_is_reported(template):
    source = template.replace("{division}", "")
    assert _acc001(source) == [("ACC001", row(source, "scaled_loss.backward()"))]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_divided_loss_scaled_by_apex_is_clean(template):
    assert _acc001(template.replace("{division}", DIVISION[template])) == []


def test_a_loss_scaling_context_given_something_else_than_the_loss_is_not_followed():
    """`with amp.scale_loss(*losses, ...)`: which loss is not in sight, so nothing is said."""
    source = SCRIPT.replace("{division}", "").replace("amp.scale_loss(loss,", "amp.scale_loss(*[loss],")
    assert _acc001(source) == []
