"""ACC012 and `accelerator.gradient_accumulation_steps` of an Accelerator built with
`gradient_accumulation_steps=1`: the count is 1, so stepping every batch is right (silent). Built
with 4, the same loop is reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

ACCELERATE = """
from accelerate import Accelerator

accelerator = Accelerator(mixed_precision="fp16", gradient_accumulation_steps=STEPS)


def train(model, optimizer, loader, criterion):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = criterion(model(batch["x"]), batch["y"])
        loss = loss / accelerator.gradient_accumulation_steps
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("steps,found", [("1", 0), ("4", 1)])
def test_accumulation_steps_of_an_accelerator_built_with_one(steps: str, found: int) -> None:
    source = textwrap.dedent(ACCELERATE).replace("STEPS", steps)
    assert len(findings_of(source, "ACC012")) == found


def test_other_objects_built_with_one_are_not_read_so() -> None:
    # A config namespace built with `grad_accum=1` may be changed from the command line.
    source = textwrap.dedent("""
        from types import SimpleNamespace

        cfg = SimpleNamespace(grad_accum=1)


        def train(model, optimizer, loader, criterion):
            for x, y in loader:
                loss = criterion(model(x), y) / cfg.grad_accum
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
    """)
    assert len(findings_of(source, "ACC012")) == 1
