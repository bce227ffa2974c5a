"""ACC005 where the epoch loop calls a step method on every batch and the method steps only under
its own `% k` test of the batch index the loop hands it (`self.train_step(batch, batch_idx)`, or
`self.batch_idx = batch_idx` set just before the call). The finding sits at the call, quoting the
method's test as the call reads it; no fix is offered (the test lives in another function).
Forms: a trainer class, a script with a step function, and the step function in another module.
Twins: an end-of-data clause in the method's test, a flush after the loop, a count the loop does
not restart with each epoch (`self.global_step`), and a count the method keeps itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, accumulate_grad_batches):
        self.model = model
        self.loader = loader
        self.accumulate_grad_batches = accumulate_grad_batches
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.global_step = 0

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch()

    def train_epoch(self):
        for batch_idx, batch in enumerate(self.loader):
            BEFORE
            self.train_batch(batch, INDEX)
        AFTER

    def train_batch(self, batch, batch_idx):
        loss = self.model(batch).mean() / self.accumulate_grad_batches
        loss.backward()
        if GATE:
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.global_step += 1
"""

SCRIPT = """
def train_step(model, optimizer, batch, step, k):
    loss = model(batch).mean() / k
    loss.backward()
    if (step + 1) % k == 0:
        optimizer.step()
        optimizer.zero_grad()


def train(model, optimizer, loader, epochs, k):
    for epoch in range(epochs):
        for step, batch in enumerate(loader):
            train_step(model, optimizer, batch, step, k)
"""


def _trainer(
    gate: str = "(batch_idx + 1) % self.accumulate_grad_batches == 0",
    index: str = "batch_idx",
    before: str = "pass",
    after: str = "pass",
) -> str:
    return TRAINER.replace("GATE", gate).replace("INDEX", index).replace("BEFORE", before).replace("AFTER", after)


@pytest.mark.parametrize(
    "index, before, gate",
    [
        ("batch_idx", "pass", "(batch_idx + 1) % self.accumulate_grad_batches == 0"),
        ("batch_idx", "pass", "not (batch_idx + 1) % self.accumulate_grad_batches"),
        ("batch_idx", "self.batch_idx = batch_idx", "(self.batch_idx + 1) % self.accumulate_grad_batches == 0"),
    ],
)
def test_the_method_steps_on_the_loops_index_without_an_end_clause(index: str, before: str, gate: str) -> None:
    source = _trainer(gate, index, before)
    [finding] = findings_of(source, "ACC005")
    assert source.splitlines()[finding.location.row - 1].strip() == f"self.train_batch(batch, {index})"
    assert "`self.train_batch()` steps only when" in finding.message
    assert "% self.accumulate_grad_batches" in finding.message and finding.fix is None


def test_a_step_function_in_a_script() -> None:
    [finding] = findings_of(SCRIPT, "ACC005")
    assert "`train_step()` steps only when `(step + 1) % k == 0`" in finding.message
    assert SCRIPT.splitlines()[finding.location.row - 1].strip() == "train_step(model, optimizer, batch, step, k)"


def test_the_step_function_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    helper, loop = SCRIPT.split("\n\ndef train(")
    (tmp_path / "steps.py").write_text(helper)
    train = tmp_path / "train.py"
    train.write_text("from steps import train_step\n\n\ndef train(" + loop)
    [finding] = findings_of(train.read_bytes(), "ACC005", path=str(train))
    assert finding.filename.endswith("train.py") and "`(step + 1) % k == 0`" in finding.message
    (tmp_path / "steps.py").write_text(helper.replace("% k == 0:", "% k == 0 or step + 1 == len(batch):"))
    assert findings_of(train.read_bytes(), "ACC005", path=str(train)) == []


@pytest.mark.parametrize(
    "gate, index, before, after",
    [
        # the method's test ends the epoch too
        ("(batch_idx + 1) % self.accumulate_grad_batches == 0 or batch_idx + 1 == len(self.loader)", "batch_idx", "pass", "pass"),
        # the loop hands over a count that runs on across epochs
        ("(batch_idx + 1) % self.accumulate_grad_batches == 0", "self.global_step", "pass", "pass"),
        # the method keeps its own count
        ("(self.micro + 1) % self.accumulate_grad_batches == 0", "batch_idx", "pass", "pass"),
        # the attribute the method tests holds the run's count, not the epoch's
        ("(self.batch_idx + 1) % self.accumulate_grad_batches == 0", "batch_idx", "self.batch_idx = self.global_step", "pass"),
    ],
)
def test_clean_twins(gate: str, index: str, before: str, after: str) -> None:
    assert findings_of(_trainer(gate, index, before, after), "ACC005") == []


def test_a_step_after_the_loop_flushes_the_tail() -> None:
    source = _trainer(after="self.optimizer.step()\n        self.optimizer.zero_grad()")
    assert findings_of(source, "ACC005") == []


def test_the_script_with_an_end_clause_is_clean() -> None:
    source = (
        SCRIPT.replace("% k == 0:", "% k == 0 or is_last:")
        .replace("batch, step, k):", "batch, step, k, is_last):")
        .replace("batch, step, k)\n", "batch, step, k, step + 1 == len(loader))\n")
    )
    assert "is_last):" in source and "len(loader))" in source
    assert findings_of(source, "ACC005") == []
