"""ACC012 knows the accumulation count by its name: besides names with `accum`, "acc" beside
"grad" (`grad_acc_step`, `gradient_acc_steps`, `cfg.grad_acc_steps`) counts micro-steps, while
`acc` alone may be an accuracy (`acc_steps`, `val_acc`) and is not read as one, nor a norm or loss
(`grad_acc_norm`)."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

SOURCE = """
def train(model, loader, optimizer, cfg, NAME):
    for batch in loader:
        loss = model(batch).mean() / NAME
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("name", ["grad_acc_step", "gradient_acc_steps", "grad_acc", "cfg.grad_acc_steps"])
def test_grad_acc_names_count_micro_steps(name: str) -> None:
    source = SOURCE.replace("NAME", name).replace(", cfg.grad_acc_steps):", "):")
    [finding] = findings_of(source, "ACC012")
    assert f"the loss is divided by the accumulation steps `{name}`" in finding.message


@pytest.mark.parametrize("name", ["acc_steps", "val_acc", "grad_acc_norm"])
def test_other_acc_names_are_not_read_as_the_count(name: str) -> None:
    assert findings_of(SOURCE.replace("NAME", name), "ACC012") == []
