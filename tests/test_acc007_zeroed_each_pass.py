"""ACC007 in a function that runs one whole window: a loop whose every pass runs backward (chunks
of a truncated sequence, micro-batches cut by size, whatever their count), the optimizer step once
after it, and gradients zeroed on every pass, so only the last pass reaches the step. Script,
trainer-class (the zeroing under a setting, `if self.accum_count == 1:`) and multi-module forms,
with clean twins: zeroing once, before the loop or on the first pass; a pass whose gradient is
read on its own; a step on every pass."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from snippets import findings, row

from tests.snippets import findings_of

SCRIPT = """
def train_window(model, optimizer, batches, trunc):
    {before}
    for batch in batches:
        for j in range(0, batch.size(1), trunc):
            {zero}
            loss = model(batch[:, j:j + trunc]).sum() / batch.numel()
            loss.backward()
            {read}
    optimizer.step()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optim, accum_count, trunc_size):
        self.model = model
        self.optim = optim
        self.accum_count = accum_count
        self.trunc_size = trunc_size

    def _gradient_accumulation(self, true_batches, normalization):
        if self.accum_count > 1:
            self.optim.zero_grad()
        for batch in true_batches:
            for j in range(0, batch.size(1) - 1, self.trunc_size):
                if self.accum_count == 1:
                    {zero}
                loss = self.model(batch[:, j:j + self.trunc_size]).sum() / normalization
                loss.backward()
        self.optim.step()
"""


def _script(zero: str = "optimizer.zero_grad()", before: str = "pass", read: str = "pass") -> str:
    return textwrap.dedent(SCRIPT).replace("{zero}", zero).replace("{before}", before).replace("{read}", read)


def _acc007(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC007"]


def test_zeroing_on_every_chunk_before_one_step_after_the_loops():
    source = _script()
    assert _acc007(source) == [row(source, "optimizer.zero_grad()")]


def test_zeroing_under_a_setting_in_a_trainer_method():
    source = textwrap.dedent(TRAINER).replace("{zero}", "self.optim.zero_grad()")
    assert _acc007(source) == [row(source, "self.optim.zero_grad()", last=True)]


@pytest.mark.parametrize("zero, before", [
    ("pass", "optimizer.zero_grad()"),  # zeroed once, before the window
    ("if j == 0:\n                optimizer.zero_grad()", "pass"),  # only on a first pass: a test on what the passes change
])
def test_zeroing_once_is_clean(zero, before):
    assert _acc007(_script(zero=zero, before=before)) == []


def test_a_pass_whose_gradient_is_read_on_its_own_is_clean():
    # per-pass gradients taken (norms, Fisher information): each pass's zeroing is the point
    read = "norms.append(sum(p.grad.norm() for p in model.parameters()))"
    assert _acc007(_script(read=read)) == []


def test_a_step_on_every_pass_is_plain_training():
    source = _script().replace("            loss.backward()\n", "            loss.backward()\n            optimizer.step()\n")
    assert _acc007(source) == []


def test_zeroing_through_a_project_optimizer_class_of_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "optim.py").write_text(textwrap.dedent("""
        class Optimizer:
            def __init__(self, inner):
                self.inner = inner

            def zero_grad(self):
                self.inner.zero_grad(set_to_none=True)

            def step(self):
                self.inner.step()
    """).lstrip())
    trainer = "from optim import Optimizer\n" + textwrap.dedent(TRAINER).replace("{zero}", "self.optim.zero_grad()").replace(
        "        self.optim = optim\n", "        self.optim = Optimizer(optim)\n")
    path = tmp_path / "trainer.py"
    path.write_text(trainer)
    found = findings_of(path.read_bytes(), path=str(path), select=("ACC007",))
    assert [f.location.row for f in found] == [row(trainer, "self.optim.zero_grad()", last=True)]
