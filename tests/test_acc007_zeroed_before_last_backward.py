"""ACC007 when the zeroing runs once per window but in the wrong place: `if (i + 1) % k == 0:
optimizer.zero_grad()` before the forward, and the step under the same test after the backward.
On the window's last micro-step the zeroing throws away the k - 1 micro-batches already summed,
so only the last one reaches the step. Zeroing on the first micro-step (`i % k == 0`) or after the
step is right and not reported; nor is a zeroing whose counter moves before the step's gate.
Forms: a script loop, a trainer whose per-batch method keeps the counter on `self` (driven by
another method), and a step function in a helper module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
def train(model, loader, optimizer, k):
    for i, (x, y) in enumerate(loader):
        if {zero_test}:
            optimizer.zero_grad()
        loss = model(x, y) / k
        loss.backward()
        if (i + 1) % k == 0:
            optimizer.step()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, k):
        self.model = model
        self.k = k
        self.global_step = 0

    def train_batch(self, optim, batch):
        if {zero_test}:
            optim.zero_grad()
        loss = self.model(batch) / self.k
        loss.backward()
        if (self.global_step + 1) % self.k == 0:
            optim.step()
        return loss.item()

    def train(self, loader, optim):
        for batch in loader:
            self.train_batch(optim, batch)
            self.global_step += 1
"""


def _acc007(source: str, zero_test: str, filename: str = "train.py") -> list[int]:
    text = textwrap.dedent(source).replace("{zero_test}", zero_test)
    return [f.location.row for f in findings_of(text.encode(), path=filename, select=("ACC007",))]


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def test_script_zeroing_under_the_steps_test_before_backward():
    assert _acc007(SCRIPT, "(i + 1) % k == 0") == [_row(SCRIPT, "optimizer.zero_grad()")]


def test_script_zeroing_on_the_first_micro_step_is_right():
    assert _acc007(SCRIPT, "i % k == 0") == []


def test_script_counter_moved_between_the_gates_is_another_micro_step():
    source = SCRIPT.replace("        loss.backward()\n", "        loss.backward()\n        i += 1\n")
    assert _acc007(source, "(i + 1) % k == 0") == []


def test_trainer_per_batch_method_with_counter_on_self():
    assert _acc007(TRAINER, "(self.global_step + 1) % self.k == 0") == [_row(TRAINER, "optim.zero_grad()")]
    assert _acc007(TRAINER, "self.global_step % self.k == 0") == []


def test_zeroing_after_the_step_in_its_block_is_right():
    source = SCRIPT.replace("            optimizer.step()\n", "            optimizer.step()\n            optimizer.zero_grad()\n")
    source = source.replace("        if {zero_test}:\n            optimizer.zero_grad()\n", "")
    assert _acc007(source, "") == []


def test_step_function_in_a_helper_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    helper = tmp_path / "steps.py"
    helper.write_text(textwrap.dedent(SCRIPT).replace("{zero_test}", "(i + 1) % k == 0"))
    (tmp_path / "main.py").write_text("from steps import train\n\n\ndef main(model, loader, optimizer):\n    train(model, loader, optimizer, 4)\n")
    found = findings_of(helper.read_bytes(), path=str(helper), select=("ACC007",))
    assert [f.location.row for f in found] == [_row(SCRIPT, "optimizer.zero_grad()")]
