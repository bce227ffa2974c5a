"""ACC009's remedy for a model an Accelerator prepared: `accelerator.accumulate(model)` holds the
all-reduce only when the Accelerator was built with `gradient_accumulation_steps`; built without
them (or with 1) it syncs on every micro-step, so the advice says to set them. Script and trainer
forms; the twin built with accumulation steps gets the plain advice."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

SCRIPT = """
from accelerate import Accelerator, DistributedDataParallelKwargs


def main(model, optimizer, loader, k):
    accelerator = Accelerator(BUILT kwargs_handlers=[DistributedDataParallelKwargs()])
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for i, batch in enumerate(loader):
        loss = model(batch)
        accelerator.backward(loss)
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
from accelerate import Accelerator, DistributedDataParallelKwargs


class Trainer:
    def __init__(self, model, optimizer, loader, k):
        self.accelerator = Accelerator(BUILT kwargs_handlers=[DistributedDataParallelKwargs()])
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)
        self.k = k

    def fit(self):
        for i, batch in enumerate(self.loader):
            loss = self.model(batch)
            self.accelerator.backward(loss)
            if (i + 1) % self.k == 0 or i + 1 == len(self.loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _acc009_messages(source: str) -> list[str]:
    return [f.message for f in findings_of(source.encode(), "ACC009", path="train.py")]


@pytest.mark.parametrize("form", [SCRIPT, TRAINER])
@pytest.mark.parametrize("built", ["", "gradient_accumulation_steps=1,"])
def test_accelerator_built_without_accumulation_steps_is_told_to_set_them(form: str, built: str) -> None:
    [message] = _acc009_messages(form.replace("BUILT", built))
    assert "with `gradient_accumulation_steps` set to the window and run each micro-step under" in message


@pytest.mark.parametrize("form", [SCRIPT, TRAINER])
def test_accelerator_built_with_accumulation_steps_gets_the_plain_advice(form: str) -> None:
    source = form.replace("BUILT", "gradient_accumulation_steps=4,").replace("def main(model,", "def main(model,")
    messages = _acc009_messages(source)
    assert messages and all("gradient_accumulation_steps" not in m and ".accumulate(" in m for m in messages)
