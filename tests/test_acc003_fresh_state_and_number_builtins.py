"""ACC003 and what a loop really carries into its next iteration:
- a Python number annealed with a builtin (`warm_up = min(1.0, warm_up + 0.9 / n)`) and multiplied
  into the loss carries no graph: `min` is computed from its arguments, none of which holds one;
  a loss or model output put through `min` still does;
- a value recomputed on every iteration after the backward from fresh inputs only (an adversarial
  attack: `x = x.detach().requires_grad_(True)`, then `out = model(x)`) is a new graph the next
  iteration backwards once. Twins that stay reported: the same recomputation under an `if` (the other
  iterations carry a spent graph on), one that reads the previous value, and one that hands on a
  value made before the backward."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

WARM_UP = """
def train(model, loader, optimizer, warm_iteration, warm_epoch, epochs):
    warm_up = 0.1
    for epoch in range(epochs):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            if epoch < warm_epoch:
                warm_up = UPDATE
                loss = loss * warm_up
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def _acc003(source: str) -> list:
    return findings_of(textwrap.dedent(source), "ACC003")


@pytest.mark.parametrize("update", ["min(1.0, warm_up + 0.9 / warm_iteration)", "float(max(0.0, warm_up * 1.1))"])
def test_a_number_annealed_with_a_builtin_is_no_carried_state(update: str) -> None:
    assert _acc003(WARM_UP.replace("UPDATE", update)) == []


@pytest.mark.parametrize("update", ["min(warm_up, loss)", "min(model(x).mean(), warm_up)"])
def test_a_graph_through_min_is_still_carried(update: str) -> None:
    assert len(_acc003(WARM_UP.replace("UPDATE", update))) == 1


ATTACK = """
import torch


def attack(model, inputs, target, steps, alpha):
    inputs = inputs.detach().requires_grad_(True)
    outputs = model(inputs)
    for it in range(steps):
        loss = torch.nn.functional.mse_loss(outputs, target)
        loss.backward()
        inputs = (inputs - alpha * inputs.grad.sign()).detach().requires_grad_(True)
        if it == steps - 1:
            break
        RECOMPUTE
    return inputs.detach()
"""


def test_recomputed_from_a_fresh_leaf_after_backward_is_clean() -> None:
    assert _acc003(ATTACK.replace("RECOMPUTE", "outputs = model(inputs)")) == []


@pytest.mark.parametrize(
    "recompute",
    [
        "if it % 2 == 0:\n            outputs = model(inputs)",
        "outputs = 0.5 * outputs + model(inputs)",
        "outputs = loss * target",
        "if it % 2 == 1:\n            continue\n        outputs = model(inputs)",
        "if it % 2 == 0:\n            fresh = model(inputs)\n        outputs = fresh * 2",
    ],
)
def test_a_spent_or_carried_graph_handed_on_is_reported(recompute: str) -> None:
    assert len(_acc003(ATTACK.replace("RECOMPUTE", recompute))) == 1
