"""ACC002 and a test that runs backward over a few cases and never steps (a kernel's gradients
checked against a per-case reference, its outputs kept in a list): no training run, silent. The same
loop in a training function that steps, or in a test that steps, is reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

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


def test_tutorial_evaluation_named_test_keeps_its_finding() -> None:
    # `def test(model, loader)` of an adversarial-example tutorial keeps every perturbed output's
    # graph: a script's evaluation pass, not a pytest function.
    source = textwrap.dedent(GRADIENT_CHECK).replace("NAME", "test").replace("STEP", "pass")
    assert len(findings_of(source, "ACC002")) == 1


def test_function_of_a_test_module_is_a_test(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    source = textwrap.dedent(GRADIENT_CHECK).replace("NAME", "check_kernel").replace("STEP", "pass")
    for name, found in (("kernels.py", 1), ("test_kernels.py", 0)):
        path = tmp_path / name
        path.write_text(source)
        assert len(findings_of(source, "ACC002", path=str(path))) == found, name
