"""ACC012's advice names everything that must move with the step into the window, and its
schedule claim holds only for a schedule sized in optimizer updates.
A loop that zeroes before the backward and unscales, clips, steps, updates the scaler and steps
the scheduler on every micro-step, while it counts its updates in windows of k: the advice moves
all of them under the gate after the backward, the zeroing last (zeroing under the gate before the
backward would wipe the window). A scheduler built in micro-steps (`num_training_steps=max_steps
* accum_steps`) gets no "ends early" claim; one built in updates does.
Forms: a script, a trainer class with the step in a method, the loop in a helper module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
import math


def train(model, loader, optimizer, scaler, max_steps, accum_steps):
    updates_per_epoch = math.ceil(len(loader) / accum_steps)
    scheduler = get_scheduler(optimizer, num_training_steps=SIZE)
    for step, batch in enumerate(loader):
        optimizer.zero_grad()
        loss = model(batch)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
"""

TRAINER = """
import math


class Trainer:
    def __init__(self, model, optimizer, scaler, loader, max_steps, accum_steps):
        self.model, self.optimizer, self.scaler, self.loader = model, optimizer, scaler, loader
        self.accum_steps = accum_steps
        self.updates_per_epoch = math.ceil(len(loader) / self.accum_steps)
        self.scheduler = get_scheduler(optimizer, num_training_steps=SIZE)

    def train(self):
        for step, batch in enumerate(self.loader):
            self.optimizer.zero_grad()
            loss = self.model(batch)
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.scheduler.step()
"""

ADVICE = (
    "run the step, with the unscale, the clipping, the scaler update and the scheduler step, then the "
    "zeroing, under `if (step + 1) % {k} == 0:` after the backward"
)


def _message(template: str, size: str, filename: str = "train.py") -> str:
    text = textwrap.dedent(template).replace("SIZE", size)
    (finding,) = findings_of(text.encode(), path=filename, select=("ACC012",))
    return finding.message


def test_script_advice_moves_every_companion_and_zeroes_last():
    message = _message(SCRIPT, "max_steps * accum_steps")
    assert ADVICE.format(k="accum_steps") in message
    assert "ends early" not in message  # sized in micro-steps: no claim


def test_script_schedule_sized_in_updates_ends_early():
    message = _message(SCRIPT, "max_steps")
    assert "a schedule sized in optimizer updates ends early" in message


def test_trainer_class_attributes():
    message = _message(TRAINER, "max_steps * self.accum_steps")
    assert ADVICE.format(k="self.accum_steps") in message
    assert "ends early" not in message
    assert "ends early" in _message(TRAINER, "max_steps")


def test_loop_in_a_helper_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    helper = tmp_path / "loops.py"
    helper.write_text(textwrap.dedent(SCRIPT).replace("SIZE", "max_steps * accum_steps"))
    (tmp_path / "main.py").write_text("from loops import train\n\n\ndef main(*parts):\n    train(*parts)\n")
    (finding,) = findings_of(helper.read_bytes(), path=str(helper), select=("ACC012",))
    assert ADVICE.format(k="accum_steps") in finding.message
    assert "ends early" not in finding.message
