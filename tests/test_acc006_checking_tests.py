"""ACC006 in a test function whose loop checks something on every case (`assert`, `assertTrue`,
`torch.testing.assert_close`): `backward(retain_graph=True)` once per dtype or per input there
exercises the code under test; no training run holds those graphs, and summing the losses would
test something else. Not reported. A training loop keeps its finding, and so does a test
function whose loop checks nothing (it is a training run written as a test). Forms: a pytest
function, a unittest method, and a test module that imports the code it checks."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


PYTEST = """
import torch


def {name}():
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(4, 3, dtype=dtype, requires_grad=True)
        out = (x * 2).exp()
        out.mean().backward(retain_graph=True)
        out.sum().backward(retain_graph=True)
        {check}
"""

UNITTEST = """
import unittest

import torch


class TestOps(unittest.TestCase):
    def test_logsumexp(self):
        for dtype in (torch.float32, torch.float64):
            mat = torch.randn(5, 5, dtype=dtype, requires_grad=True)
            result = torch.logsumexp(mat, dim=1)
            torch.mean(result).backward(retain_graph=True)
            {check}
            result = torch.logsumexp(mat * 2, dim=1)
            torch.mean(result).backward()
"""


def _acc006(source: str, **parts: str) -> list[int]:
    text = textwrap.dedent(source)
    for key, value in parts.items():
        text = text.replace("{" + key + "}", value)
    return [f.location.row for f in findings_of(text.encode(), path="test_ops.py", select=("ACC006",))]


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def test_pytest_function_checking_each_case_is_silent():
    assert _acc006(PYTEST, name="test_exp_grad", check="assert torch.isfinite(x.grad).all()") == []
    assert _acc006(PYTEST, name="test_exp_grad", check="torch.testing.assert_close(out, out)") == []


def test_test_function_that_checks_nothing_in_its_loop_keeps_the_finding():
    found = _acc006(PYTEST, name="test_exp_grad", check="pass")
    assert _row(PYTEST, "out.mean().backward(retain_graph=True)") in found


def test_training_function_with_an_assert_keeps_the_finding():
    # A training script's own assert is no test: the function's name says it trains.
    found = _acc006(PYTEST, name="train_epoch", check="assert torch.isfinite(x.grad).all()")
    assert _row(PYTEST, "out.mean().backward(retain_graph=True)") in found


def test_unittest_method_checking_each_case_is_silent():
    assert _acc006(UNITTEST, check="self.assertTrue(torch.isfinite(result).all())") == []
    assert _acc006(UNITTEST, check="pass") == [_row(UNITTEST, "torch.mean(result).backward(retain_graph=True)")]


def test_test_module_importing_the_code_it_checks(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "ops.py").write_text("import torch\n\n\ndef double_exp(x):\n    return (x * 2).exp()\n")
    test = tmp_path / "test_ops.py"
    source = textwrap.dedent(PYTEST).replace("{name}", "test_exp_grad").replace("(x * 2).exp()", "double_exp(x)")
    rows = {}
    for check in ("assert x.grad is not None", "pass"):
        test.write_text("from ops import double_exp\n" + source.replace("{check}", check))
        found = findings_of(test.read_bytes(), path=str(test), select=("ACC006",))
        rows[check] = [f.location.row - 1 for f in found]  # minus the import line
    assert rows["assert x.grad is not None"] == []
    assert _row(PYTEST, "out.mean().backward(retain_graph=True)") in rows["pass"]
