"""ACC001 stays silent in a test that exercises an accumulating loop and asserts something on every
iteration (dtypes after the cast, that the parameters moved): the size of the update is not what it
checks. A test is a `def test_...` function, or any function of a test module (`test_x.py`,
`x_test.py`), such as the `_check_mixed_precision(rank, ...)` a spawned test runs. Twins: the same
function in a training module, and a test module whose loop asserts nothing, stay reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of

CHECK = """
import torch


def NAME(model, optimizer, data_loader):
    for _ in range(3):
        optimizer.zero_grad()
        for _ in range(2):
            x, y = next(data_loader)
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
        CHECK
        optimizer.step()
"""
ASSERTS = "assert all(p.grad.dtype == torch.float32 for p in model.parameters())"
LOGS = "print(loss.item())"


def _acc001(root: Path, relative: str, name: str, check: str) -> int:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(CHECK).replace("NAME", name).replace("CHECK", check))
    return len(findings_of(path.read_bytes(), path=str(path), select=("ACC001",)))


def test_helper_of_a_test_module(tmp_path: Path):
    assert _acc001(tmp_path, "tests/test_mixed_precision.py", "_check_mixed_precision", ASSERTS) == 0
    assert _acc001(tmp_path, "tests/mixed_precision_test.py", "_check_mixed_precision", ASSERTS) == 0
    assert _acc001(tmp_path, "tests/test_mixed_precision.py", "_check_mixed_precision", LOGS) == 1


def test_test_function_in_any_module(tmp_path: Path):
    assert _acc001(tmp_path, "train.py", "test_three_steps", ASSERTS) == 0


def test_training_module_is_reported(tmp_path: Path):
    assert _acc001(tmp_path, "train.py", "_check_mixed_precision", ASSERTS) == 1
    assert _acc001(tmp_path, "tests/train.py", "run", ASSERTS) == 1
