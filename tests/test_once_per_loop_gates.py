"""A statement under `if step == 0:` (the micro-loop's own index equal to a number, alone or in
an `and`) runs once per loop, not every micro-step: a warm-up helper that runs its own backward
and zeroes the gradients before the first window is no ACC007. Script and trainer-class forms,
each with the twin that zeroes every micro-step and is reported."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

SCRIPT = """
def train(model, optimizer, loader, k):
    for step, batch in enumerate(loader):
        {gate}
            optimizer.zero_grad()
        loss = model(batch) / k
        loss.backward()
        if (step + 1) % k == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k

    def estimate_norms(self, batch):
        self.model(batch).sum().backward()
        self.optimizer.zero_grad()

    def train(self, loader):
        for epoch in range(3):
            for step, batch in enumerate(loader):
                {gate}
                    self.estimate_norms(batch)
                loss = self.model(batch) / self.k
                loss.backward()
                if (step + 1) % self.k == 0 or step + 1 == len(loader):
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""

ONCE = {SCRIPT: "if step == 0:", TRAINER: "if epoch == 0 and step == 0:"}
EVERY = {SCRIPT: "if True:", TRAINER: "if epoch >= 0:"}


def _acc007(source: str) -> list[tuple[str, int]]:
    return [f for f in findings(source) if f[0] == "ACC007"]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_zeroing_on_the_first_micro_step_only_is_clean(template):
    assert _acc007(template.replace("{gate}", ONCE[template])) == []


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_zeroing_every_micro_step_is_reported(template):
    source = template.replace("{gate}", EVERY[template])
    zeroing = "optimizer.zero_grad()" if template is SCRIPT else "self.estimate_norms(batch)"
    assert _acc007(source) == [("ACC007", row(source, zeroing))]
