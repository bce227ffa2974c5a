"""ACC012 through a guard around the whole micro-step: `if loss is not None:` holding the
division by k, the backward and the step skips a micro-step entirely, so it holds no step apart
from its backward: the step still runs on every micro-step that does a backward. A guard that holds
the step but not every backward (or a `% k` gate inside it) still holds it.
Forms: a script loop, a trainer method, the loop in a helper module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
def train(encoder, loader, optimizer, scheduler, args):
    for batch in loader:
        loss = encoder.train_query(batch)
        if loss is not None:
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            if args.fp16:
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
            else:
                loss.backward()
            STEP
"""

TRAINER = """
class Trainer:
    def __init__(self, encoder, optimizer, args):
        self.encoder, self.optimizer, self.args = encoder, optimizer, args

    def train(self, loader):
        for step, batch in enumerate(loader):
            loss = self.encoder(batch)
            if loss is not None:
                loss = loss / self.args.gradient_accumulation_steps
                loss.backward()
                STEP
"""

EVERY = "optimizer.step()\n            optimizer.zero_grad()"
GATED = "if (i + 1) % args.gradient_accumulation_steps == 0:\n                optimizer.step()\n                optimizer.zero_grad()"


def _rows(template: str, step: str, filename: str = "train.py") -> list[int]:
    text = textwrap.dedent(template).replace("STEP", step)
    return [f.location.row for f in findings_of(text.encode(), path=filename, select=("ACC012",))]


def _row(template: str, step: str, needle: str) -> int:
    text = textwrap.dedent(template).replace("STEP", step)
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_script_guard_around_backward_and_step():
    assert _rows(SCRIPT, EVERY) == [_row(SCRIPT, EVERY, "optimizer.step()")]


def test_script_step_gated_on_the_window_inside_the_guard_is_right():
    source = SCRIPT.replace("for batch in loader:", "for i, batch in enumerate(loader):")
    assert _rows(source, GATED) == []


def test_script_guard_that_holds_the_step_but_not_the_backward_holds_it():
    source = SCRIPT.replace("            STEP\n", "        if args.do_step:\n            STEP\n")
    assert _rows(source, "optimizer.step()") == []


def test_trainer_method():
    step = "self.optimizer.step()\n                self.optimizer.zero_grad()"
    assert _rows(TRAINER, step) == [_row(TRAINER, step, "self.optimizer.step()")]


def test_loop_in_a_helper_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    helper = tmp_path / "loops.py"
    helper.write_text(textwrap.dedent(SCRIPT).replace("STEP", EVERY))
    (tmp_path / "main.py").write_text("from loops import train\n\n\ndef main(*parts):\n    train(*parts)\n")
    found = findings_of(helper.read_bytes(), path=str(helper), select=("ACC012",))
    assert [f.location.row for f in found] == [_row(SCRIPT, EVERY, "optimizer.step()")]
