"""A window whose gate runs backward on both branches: `if boundary: loss.backward(); step()` /
`else: loss.backward()` (apex's form, with `delay_unscale=True` on the non-final micro-steps).
One of the two runs on every micro-step, so both are the window's per-micro-step backward: an
undivided loss is ACC001 at each (and the fix divides each), and a DDP model all-reduces on
every micro-step (ACC009). Forms: a script, a trainer whose `optimize()` holds the gate, and
that step function in another module. Clean twins: both branches divided; the plain branch's
backward under a further test; the step branch's backward after its step."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, loader, optimizer, k):
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        if (i + 1) % k == 0:
            STEP_BRANCH
            optimizer.step()
            optimizer.zero_grad()
        else:
            PLAIN_BRANCH
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, k):
        self.model = model
        self.optimizer = optimizer
        self.k = k
        self.n_iter = 0

    def optimize(self, loss):
        if self.n_iter % self.k == 0:
            STEP_BRANCH
            self.optimizer.step()
            self.optimizer.zero_grad()
        else:
            PLAIN_BRANCH

    def train(self, loader):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.optimize(loss)
            self.n_iter += 1
"""

BACKWARD = "loss.backward()"
DIVIDED_SCRIPT = "(loss / k).backward()"
DIVIDED_TRAINER = "(loss / self.k).backward()"


def _findings(source: str, code: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), code, path=path)


def _fill(template: str, step_branch: str, plain_branch: str) -> str:
    return textwrap.dedent(template).replace("STEP_BRANCH", step_branch).replace("PLAIN_BRANCH", plain_branch)


def _lines_of(source: str, text: str) -> list[int]:
    return [n for n, line in enumerate(source.splitlines(), 1) if text in line]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_undivided_backward_on_both_branches_is_reported_at_each(template: str) -> None:
    source = _fill(template, BACKWARD, BACKWARD)
    found = _findings(source, "ACC001")
    assert sorted(f.location.row for f in found) == _lines_of(source, BACKWARD)
    assert all(f.fix is not None for f in found)


@pytest.mark.parametrize("template,divided", [(SCRIPT, DIVIDED_SCRIPT), (TRAINER, DIVIDED_TRAINER)])
def test_both_branches_divided_is_clean(template: str, divided: str) -> None:
    assert _findings(_fill(template, divided, divided), "ACC001") == []


def test_fix_divides_both_and_then_is_clean() -> None:
    source = _fill(SCRIPT, BACKWARD, BACKWARD)
    result = check_source(source.encode(), "train.py")
    fixed = source
    for finding in sorted((f for f in result.findings if f.code == "ACC001"), key=lambda f: -f.location.row):
        row = finding.location.row
        lines = fixed.splitlines()
        lines[row - 1] = lines[row - 1].replace("loss.backward()", "(loss / k).backward()")
        fixed = "\n".join(lines) + "\n"
    assert fixed.count("(loss / k).backward()") == 2
    assert _findings(fixed, "ACC001") == []


def test_plain_backward_under_a_further_test_is_not_paired() -> None:
    source = _fill(SCRIPT, BACKWARD, "if x.numel():\n                loss.backward()")
    assert _findings(source, "ACC001") == []


def test_step_branch_backward_after_its_step_is_not_paired() -> None:
    source = textwrap.dedent(SCRIPT).replace(
        "            STEP_BRANCH\n            optimizer.step()\n            optimizer.zero_grad()\n",
        "            optimizer.step()\n            optimizer.zero_grad()\n            loss.backward()\n",
    ).replace("PLAIN_BRANCH", BACKWARD)
    assert _findings(source, "ACC001") == []


def test_ddp_model_all_reduces_on_every_micro_step() -> None:
    source = _fill(SCRIPT, BACKWARD, BACKWARD).replace(
        "def train(model, loader, optimizer, k):\n",
        "def train(model, loader, optimizer, k):\n    model = torch.nn.parallel.DistributedDataParallel(model)\n",
    )
    assert len(_findings(source, "ACC009")) == 1


STEP_FUNCTION = """
def optimize(loss, optimizer, n_iter, k):
    if n_iter % k == 0:
        STEP_BRANCH
        optimizer.step()
        optimizer.zero_grad()
    else:
        PLAIN_BRANCH
"""

CALLER = """
import torch
from stepping import optimize


def train(model, loader, optimizer, k):
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimize(loss, optimizer, i, k)
"""


@pytest.mark.parametrize("branch,found", [(BACKWARD, 2), (DIVIDED_SCRIPT, 0)])
def test_step_function_in_another_module(tmp_path: Path, branch: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "stepping.py").write_text(_fill(STEP_FUNCTION, branch, branch))
    (tmp_path / "train.py").write_text(textwrap.dedent(CALLER))
    stepping = tmp_path / "stepping.py"
    findings = _findings(stepping.read_text(), "ACC001", str(stepping))
    assert sorted(f.location.row for f in findings) == (_lines_of(stepping.read_text(), BACKWARD) if found else [])
