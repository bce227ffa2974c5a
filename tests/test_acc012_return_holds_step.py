"""A function called on every micro-step that runs backward and then returns early unless the
window is complete (`if self.micro_step + 1 != k: return`) steps once per window: ACC012 stays
silent. Twin: the early return comes before the backward (it skips a whole micro-step, e.g. an
empty batch), so the step still runs on every micro-step that trains (ACC012). Forms: a trainer
class, a script with module functions, and the micro-step function in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, accum_iter):
        self.model = model
        self.optimizer = optimizer
        self.accum_iter = accum_iter

    def run_step(self, loader):
        for micro_step in range(self.accum_iter):
            self.micro_step = micro_step
            self.run_min_batch(next(loader))

    def run_min_batch(self, batch):
        RETURN_BEFORE
        loss = self.model(batch).mean()
        loss = loss / self.accum_iter
        loss.backward()
        RETURN_AFTER
        self.optimizer.step()
        self.optimizer.zero_grad()
"""

SCRIPT = """
def micro_step(model, optimizer, batch, i, accum_steps):
    RETURN_BEFORE
    loss = model(batch).mean() / accum_steps
    loss.backward()
    RETURN_AFTER
    optimizer.step()
    optimizer.zero_grad()


def train(model, optimizer, loader, accum_steps):
    for batch in loader:
        for i, chunk in enumerate(batch.chunk(accum_steps)):
            micro_step(model, optimizer, chunk, i, accum_steps)
"""

EARLY = {
    "trainer": ("if batch is None:\n            return", "if self.micro_step + 1 != self.accum_iter:\n            return"),
    "script": ("if batch is None:\n        return", "if i + 1 < accum_steps:\n        return"),
}


def _source(form: str, held: bool) -> str:
    before, after = EARLY[form]
    text = textwrap.dedent(TRAINER if form == "trainer" else SCRIPT)
    return text.replace("RETURN_BEFORE", "pass" if held else before).replace("RETURN_AFTER", after if held else "pass")


def _acc012(source: str, path: str = "train.py") -> list[int]:
    return [v.location.row for v in findings_of(source.encode(), "ACC012", path=path)]


@pytest.mark.parametrize("form", ["trainer", "script"])
def test_return_after_backward_holds_the_step(form: str) -> None:
    assert _acc012(_source(form, held=True)) == []


@pytest.mark.parametrize("form", ["trainer", "script"])
def test_return_before_backward_holds_nothing(form: str) -> None:
    assert len(_acc012(_source(form, held=False))) == 1


@pytest.mark.parametrize("held", [True, False])
def test_micro_step_in_another_module(tmp_path: Path, held: bool) -> None:
    (tmp_path / ".git").mkdir()
    source = _source("script", held)
    helper, loop = source.split("\n\n\ndef train")
    (tmp_path / "steps.py").write_text(helper + "\n")
    train = tmp_path / "train.py"
    train.write_text("from steps import micro_step\n\n\ndef train" + loop)
    found = findings_of(train.read_bytes(), "ACC012", path=str(train))
    assert len(found) == (0 if held else 1)
