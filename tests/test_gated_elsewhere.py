"""A statement in an accumulating loop is reported as running on every micro-step (ACC007's
zeroing, ACC008's `scaler.update()`) only when nothing else decides how often it runs. Under a flag
the loop sets itself (`if should_start_update:` cleared once the block has run, set again at the
step, MMF's training loop) or under another `% n` test (`if batch_idx % 100 == 0:`), it does not.
`scaler.update(new_scale)` sets the scale by hand: it reads no inf checks and raises nothing."""

from __future__ import annotations

import textwrap

from tests.snippets import findings

FLAG_LOOP = """
import torch


def train(model, loader, optimizer, update_frequency):
    should_start_update = True
    for idx, batch in enumerate(loader):
        if should_start_update:
            optimizer.zero_grad()
            {clear}
        loss = model(batch) / update_frequency
        loss.backward()
        if (idx + 1) % update_frequency:
            continue
        optimizer.step()
        should_start_update = True
"""

TRAINER = """
import torch


class Trainer:
    def run(self, loader):
        self.fresh = True
        for idx, batch in enumerate(loader):
            if self.fresh:
                self.optimizer.zero_grad()
                {clear}
            loss = self.model(batch) / self.accum_steps
            loss.backward()
            if (idx + 1) % self.accum_steps == 0:
                self.optimizer.step()
                self.fresh = True
"""

SCALER_LOOP = """
import torch


def train(model, loader, optimizer, scaler, accum_steps):
    for batch_idx, batch in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(batch) / accum_steps
        scaler.scale(loss).backward()
        if (batch_idx + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        {bump}
"""


def _found(source: str, code: str) -> list[int]:
    return [r for c, r in findings(source, "train.py") if c == code]


def _rows(source: str, text: str) -> list[int]:
    return [i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if line.strip() == text]


def test_zeroing_under_a_flag_the_loop_clears_is_not_every_micro_step():
    assert _found(FLAG_LOOP.format(clear="should_start_update = False"), "ACC007") == []


def test_zeroing_outside_the_flag_block_is_reported():
    source = FLAG_LOOP.format(clear="should_start_update = False").replace(
        "            optimizer.zero_grad()\n            should_start_update = False",
        "            should_start_update = False\n        optimizer.zero_grad()",
    )
    assert _found(source, "ACC007") == _rows(source, "optimizer.zero_grad()")


def test_a_trainer_flag_on_self_is_read_the_same():
    assert _found(TRAINER.format(clear="self.fresh = False"), "ACC007") == []


def test_a_scale_set_by_hand_every_hundred_batches_is_no_acc008():
    bump = "if batch_idx % 100 == 0 and scaler.get_scale() < 1.0:\n            scaler.update(scaler.get_scale() * 2.0)"
    assert _found(SCALER_LOOP.format(bump=bump), "ACC008") == []


def test_a_bare_update_every_hundred_batches_is_no_acc008_either():
    bump = "if batch_idx % 100 == 0:\n            scaler.update()"
    assert _found(SCALER_LOOP.format(bump=bump), "ACC008") == []


def test_a_bare_update_on_every_micro_step_is_reported():
    source = SCALER_LOOP.format(bump="scaler.update()")
    assert _found(source, "ACC008") == _rows(source, "scaler.update()")[-1:]
