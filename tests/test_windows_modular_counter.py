"""A window counted by hand and kept in range instead of reset: `acc_step = (acc_step + 1) % k`
(or `acc_step += 1` then `acc_step = acc_step % k`, or `acc_step %= k`) on every micro-step, and
the step held by `if acc_step == 0:`, as lingua-style trainers keep it on a state object. The
window's rules read it: ACC001 for an undivided loss, ACC015 for a clip on every micro-step.
Twins: the loss divided by k and the clip in the step block; a counter that is never raised."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, data, optimizer, grad_acc_steps, max_steps):
    acc_step = 0
    step = 0
    while step < max_steps:
        COUNT
        batch = next(data)
        loss = model(batch).mean()LOSS
        loss.backward()
        CLIP
        if acc_step == 0:
            STEP_CLIP
            optimizer.step()
            optimizer.zero_grad()
            step += 1
"""

STATE = """
import torch
from dataclasses import dataclass


@dataclass
class TrainState:
    step: int = 0
    acc_step: int = 0


def train(model, data, optimizer, args):
    train_state = TrainState()
    while train_state.step < args.steps:
        train_state.acc_step += 1
        train_state.acc_step = train_state.acc_step % args.grad_acc_steps
        batch = next(data)
        loss = model(batch).mean() / args.grad_acc_steps
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        if train_state.acc_step == 0:
            optimizer.step()
            optimizer.zero_grad()
            train_state.step += 1
"""

CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def _script(count: str, loss: str = " / grad_acc_steps", clip: str = CLIP, step_clip: str = "pass") -> str:
    return SCRIPT.replace("COUNT", count).replace("LOSS", loss).replace("STEP_CLIP", step_clip).replace("CLIP", clip)


COUNTS = [
    "acc_step = (acc_step + 1) % grad_acc_steps",
    "acc_step += 1\n        acc_step = acc_step % grad_acc_steps",
    "acc_step += 1\n        acc_step %= grad_acc_steps",
]


@pytest.mark.parametrize("count", COUNTS)
def test_a_clip_on_every_micro_step_of_a_modular_window(count: str) -> None:
    source = _script(count)
    [finding] = findings_of(source, "ACC015")
    assert source.splitlines()[finding.location.row - 1].strip() == CLIP


@pytest.mark.parametrize("count", COUNTS)
def test_an_undivided_loss_in_a_modular_window(count: str) -> None:
    source = _script(count, loss="", clip="pass")
    [finding] = findings_of(source, "ACC001")
    assert "`grad_acc_steps`" in finding.message


def test_a_counter_on_a_state_object() -> None:
    [finding] = findings_of(STATE, "ACC015")
    assert "clipped on every micro-step" in finding.message


@pytest.mark.parametrize("count", COUNTS)
def test_clip_in_the_step_block_and_a_divided_loss_are_clean(count: str) -> None:
    source = _script(count, clip="pass", step_clip=CLIP)
    assert findings_of(source, "ACC015") == [] and findings_of(source, "ACC001") == []


def test_a_counter_never_raised_is_no_window() -> None:
    source = _script("acc_step = acc_step % grad_acc_steps", loss="")
    assert findings_of(source, "ACC015") == [] and findings_of(source, "ACC001") == []
