"""ACC002 and a test that runs backward over a few cases and never steps (a kernel's gradients
checked against a per-case reference, its outputs kept in a list): no training run, silent. The same
loop in a training function that steps, or in a test that steps, is reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

GRADIENT_CHECK = """
import torch


def NAME(kernel, reference, inputs, optimizer):
    outs = []
    for q in inputs:
        q = q.detach().requires_grad_(True)
        out = reference(q)
        outs.append(out)
        out.backward(torch.ones_like(out))
        STEP
    print(len(outs))
"""


@pytest.mark.parametrize(
    "name,step,found",
    [("test_kernel_gradients", "pass", 0), ("train_epoch", "optimizer.step()", 1), ("test_training_run", "optimizer.step()", 1)],
)
def test_gradient_check_in_a_test(name: str, step: str, found: int) -> None:
    source = textwrap.dedent(GRADIENT_CHECK).replace("NAME", name).replace("STEP", step)
    assert len(findings_of(source, "ACC002")) == found
