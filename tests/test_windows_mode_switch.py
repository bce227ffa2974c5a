"""A loop with two modes chosen once: `if cur_batch >= cfg.GLOBAL_BATCH_SIZE:` steps on every
batch, `else:` accumulates under `if (i + 1) % num_iters == 0:`. The test never changes inside the
loop, so a run takes one branch only, and the accumulating branch's window is read as any other
(its dropped tail is ACC005). A branch test that moves in the loop (a counter, a `self.`
attribute another method may change, a call) is no mode: the loop keeps steps on every
iteration and nothing is read as a window.
Forms: a script loop, a trainer method whose mode is a local set before its loop, the loop in a
helper module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
def train_epoch(loader, model, optimizer, cfg):
    cur_batch = cfg.NUM_SHARDS * cfg.BATCH_SIZE
    num_iters = cfg.GLOBAL_BATCH_SIZE // cur_batch
    for cur_iter, (inputs, labels) in enumerate(loader):
        loss = model(inputs, labels)
        if MODE:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        else:
            (loss / num_iters).backward()
            if (cur_iter + 1) % num_iters == 0:
                optimizer.step()
                optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, cfg):
        self.model, self.optimizer, self.cfg = model, optimizer, cfg

    def train_epoch(self, loader):
        cur_batch = self.cfg.NUM_SHARDS * self.cfg.BATCH_SIZE
        global_batch = self.cfg.GLOBAL_BATCH_SIZE
        num_iters = global_batch // cur_batch
        for cur_iter, (inputs, labels) in enumerate(loader):
            loss = self.model(inputs, labels)
            if MODE:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            else:
                (loss / num_iters).backward()
                if (cur_iter + 1) % num_iters == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""


def _rows(template: str, mode: str, filename: str = "train.py") -> list[int]:
    text = textwrap.dedent(template).replace("MODE", mode)
    return [f.location.row for f in findings_of(text.encode(), path=filename, select=("ACC005",))]


def _row(template: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(template).splitlines(), 1) if needle in line)


def test_script_mode_chosen_by_settings_keeps_the_accumulating_window():
    assert _rows(SCRIPT, "cur_batch >= cfg.GLOBAL_BATCH_SIZE") == [_row(SCRIPT, "if (cur_iter + 1) %")]


def test_script_branch_test_that_moves_in_the_loop_is_no_mode():
    assert _rows(SCRIPT, "cur_iter < 100") == []
    assert _rows(SCRIPT, "should_sync(cur_iter)") == []


def test_trainer_mode_from_a_local_set_before_the_loop():
    assert _rows(TRAINER, "cur_batch >= self.cfg.GLOBAL_BATCH_SIZE") == []  # `self.` may move between calls
    assert _rows(TRAINER, "cur_batch >= global_batch") == [_row(TRAINER, "if (cur_iter + 1) %")]


def test_loop_in_a_helper_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    helper = tmp_path / "loops.py"
    helper.write_text(textwrap.dedent(SCRIPT).replace("MODE", "cur_batch >= cfg.GLOBAL_BATCH_SIZE"))
    (tmp_path / "main.py").write_text("from loops import train_epoch\n\n\ndef main(*parts):\n    train_epoch(*parts)\n")
    found = findings_of(helper.read_bytes(), path=str(helper), select=("ACC005",))
    assert [f.location.row for f in found] == [_row(SCRIPT, "if (cur_iter + 1) %")]
