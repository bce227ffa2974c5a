"""ACC007 stays silent for a zeroing that runs in an `except` clause inside the loop (`except
StopIteration:` when the data iterator restarts, an evaluation helper there that zeroes): it runs
once per pass over the data, not on every micro-step. The twin calls the same helper on every
iteration and is reported. Forms: a script loop and a trainer method."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
def evaluate_dev(model, dev_loader):
    for batch in dev_loader:
        model(batch).mean().backward()
        model.zero_grad()


def train(model, optimizer, loader, dev_loader, k, total):
    it = iter(loader)
    for step in range(total):
        try:
            batch = next(it)
        except StopIteration:
            EVAL_ON_RESTART
            it = iter(loader)
            batch = next(it)
        EVAL_EVERY_STEP
        loss = model(batch).mean() / k
        loss.backward()
        if (step + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k

    def evaluate(self, dev_loader):
        for batch in dev_loader:
            self.model(batch).mean().backward()
            self.optimizer.zero_grad()

    def train(self, loader, dev_loader, total):
        it = iter(loader)
        for step in range(total):
            try:
                batch = next(it)
            except StopIteration:
                EVAL_ON_RESTART
                it = iter(loader)
                batch = next(it)
            EVAL_EVERY_STEP
            (self.model(batch).mean() / self.k).backward()
            if (step + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _acc007(source: str, call: str, every_step: bool) -> int:
    text = textwrap.dedent(source)
    text = text.replace("EVAL_ON_RESTART", "pass" if every_step else call)
    text = text.replace("EVAL_EVERY_STEP", call if every_step else "pass")
    return len(findings_of(text.encode(), path="train.py", select=("ACC007",)))


def test_script_zeroing_when_the_data_restarts():
    assert _acc007(SCRIPT, "evaluate_dev(model, dev_loader)", every_step=False) == 0
    assert _acc007(SCRIPT, "evaluate_dev(model, dev_loader)", every_step=True) == 1


def test_trainer_zeroing_when_the_data_restarts():
    assert _acc007(TRAINER, "self.evaluate(dev_loader)", every_step=False) == 0
    assert _acc007(TRAINER, "self.evaluate(dev_loader)", every_step=True) == 1
