"""ACC004 where the scaled and the plain backward sit on the two branches of one `if`, with the
`unscale_` in the scaled branch right after its backward, and the clip after the `if`
(`if amp: scaler.scale(loss).backward(); scaler.unscale_(opt) else: loss.backward()`): the
gradients are unscaled on every path that scaled them. Read in a step function without a loop
(a method, a function nested in the loop's body) and in a loop; the twins drop the `unscale_`."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings, row

STEP_BODY = """
    if amp:
        scaler.scale(loss).backward()
        {unscale}
    else:
        loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    if amp:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    optimizer.zero_grad()
"""

FUNCTION = """
import torch


def train_step(model, batch, optimizer, scaler, amp, clip):
    loss = model(batch)
""" + STEP_BODY

METHOD = """
import torch


class Trainer:
    def train_step(self, batch):
        model, optimizer, scaler, amp, clip = self.model, self.optimizer, self.scaler, self.amp, self.clip
        loss = model(batch)
""" + textwrap.indent(STEP_BODY, "    ")

LOOP = """
import torch


def train(model, loader, optimizer, scaler, amp, clip):
    for batch in loader:
        loss = model(batch)
""" + textwrap.indent(STEP_BODY, "    ")

NESTED = """
import torch


def train(model, loader, optimizer, scaler, amp, clip):
    for batch in loader:
        def train_step():
            loss = model(batch)
""" + textwrap.indent(STEP_BODY, "        ") + """
        train_step()
"""

UNSCALE = "scaler.unscale_(optimizer)"




@pytest.mark.parametrize("shape", [FUNCTION, METHOD, LOOP, NESTED], ids=["function", "method", "loop", "nested"])
def test_unscaled_in_the_scaled_branch_is_clean(shape):
    assert findings(shape.format(unscale=UNSCALE)) == []


@pytest.mark.parametrize("shape", [FUNCTION, METHOD, LOOP, NESTED], ids=["function", "method", "loop", "nested"])
def test_no_unscale_in_the_scaled_branch_is_reported(shape):
    source = shape.format(unscale="pass")
    assert findings(source) == [("ACC004", row(source, "clip_grad_norm_"))]
