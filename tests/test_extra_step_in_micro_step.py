"""A micro-step that may take an extra update of its own (repeat a hard batch in an inner `while`:
backward, step, update the scaler, zero): the backward, the zeroing and `scaler.update()` in the
block of that step belong to it, not to the window, so ACC001, ACC007 and ACC008 stay silent. The
twins without the extra step add an undivided loss to the window and zero or update every
micro-step, and are reported. Script and trainer forms."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

SCRIPT = """
import torch

def train(model, loader, optimizer, scaler, accum_steps, threshold):
    for step, (x, y) in enumerate(loader):
        while True:
            loss = model(x, y)
            if loss.item() < threshold:
                break
            scaler.scale(loss).backward()
            {extra}
            scaler.update()
            optimizer.zero_grad()
        loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""

TRAINER = """
import torch

class Trainer:
    def __init__(self, model, optimizer, scaler, accum_steps):
        self.model, self.optimizer, self.scaler, self.accum_steps = model, optimizer, scaler, accum_steps

    def train_epoch(self, loader, threshold):
        for step, (x, y) in enumerate(loader):
            while True:
                loss = self.model(x, y)
                if loss.item() < threshold:
                    break
                self.scaler.scale(loss).backward()
                {extra}
                self.scaler.update()
                self.optimizer.zero_grad()
            loss = self.model(x, y) / self.accum_steps
            self.scaler.scale(loss).backward()
            if (step + 1) % self.accum_steps == 0 or step + 1 == len(loader):
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("template, step", [(SCRIPT, "scaler.step(optimizer)"), (TRAINER, "self.scaler.step(self.optimizer)")])
def test_what_follows_an_extra_step_of_its_own_is_not_every_micro_step(template, step):
    assert findings(template.format(extra=step)) == []


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_without_that_step_the_zeroing_and_the_update_run_every_micro_step(template):
    source = template.format(extra="pass")
    backward = row(source, "scaler.scale(loss).backward()")
    update = row(source, "scaler.update()")
    zero = row(source, "optimizer.zero_grad()")
    assert findings(source) == [("ACC001", backward), ("ACC007", zero), ("ACC008", update)]
