"""ACC001 on a step function called once per batch that runs the backward itself, before its own
window gate (`def optimize(self, loss): loss.backward(); self.n_iter += 1; if self.n_iter % k == 0:
step()`, the XLM-style trainer): the loss reaches backward on every micro-step, so it must be
divided by k, by the caller or inside. Read from the loop that calls it (one call down) and from
the function's own gate when a further method sits between (`train` -> `step` -> `optimize`).
`KLDivLoss(reduction="batchmean")` averages over the batch: a mean loss, owed the division.
Forms: a trainer class, a script with a module function, and that function in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of

TRAINER = """
import torch


class Trainer:
    def __init__(self, params, model, loader):
        self.params = params
        self.model = model
        self.loader = loader
        self.n_iter = 0
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=params.lr)

    def train(self):
        for _ in range(self.params.n_epochs):
            for x, y in self.loader:
                loss = (self.model(x) - y).pow(2).mean()
                self.optimize(LOSS)

    def optimize(self, loss):
        BACKWARD
        self.n_iter += 1
        if self.n_iter % self.params.accumulation_steps == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
"""

DISTILLER = """
import torch
from torch import nn


class Distiller:
    def __init__(self, params, student, teacher, loader):
        self.params = params
        self.student = student
        self.teacher = teacher
        self.loader = loader
        self.n_iter = 0
        self.kl = nn.KLDivLoss(reduction=REDUCTION)
        self.optimizer = torch.optim.AdamW(student.parameters(), lr=params.lr)

    def train(self):
        for _ in range(self.params.n_epochs):
            for batch in self.loader:
                self.step(batch)

    def step(self, batch):
        s_logits = self.student(batch)
        with torch.no_grad():
            t_logits = self.teacher(batch)
        loss = self.kl(s_logits.log_softmax(-1), t_logits.softmax(-1))
        self.optimize(loss)

    def optimize(self, loss):
        loss.backward()
        self.n_iter += 1
        if self.n_iter % self.params.accumulation_steps == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()
"""

STEPS = """
def optimize(loss, optimizer, i, k):
    BACKWARD
    if (i + 1) % k == 0:
        optimizer.step()
        optimizer.zero_grad()
"""

SCRIPT_LOOP = """
def train(model, loader, optimizer, k):
    for i, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean()
        optimize(LOSS, optimizer, i, k)
"""


def _acc001(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC001", path=path)


def _fill(template: str, loss: str = "loss", backward: str = "loss.backward()") -> str:
    return textwrap.dedent(template).replace("LOSS", loss).replace("BACKWARD", backward)


def _line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_trainer_step_function_backward_before_its_gate_is_reported_with_a_fix() -> None:
    source = _fill(TRAINER)
    found = _acc001(source)
    assert [f.location.row for f in found] == [_line_of(source, "loss.backward()")]
    assert "`self.params.accumulation_steps`" in found[0].message
    fixed = fix_source(source, "train.py", select=("ACC001",)).fixed_source
    assert fixed is not None and "(loss / self.params.accumulation_steps).backward()" in fixed
    assert _acc001(fixed) == []


@pytest.mark.parametrize("loss,backward", [
    ("loss / self.params.accumulation_steps", "loss.backward()"),  # divided by the caller
    ("loss", "(loss / self.params.accumulation_steps).backward()"),  # divided inside
])
def test_trainer_divided_twins_are_clean(loss: str, backward: str) -> None:
    assert _acc001(_fill(TRAINER, loss, backward)) == []


def test_backward_inside_the_gate_only_is_no_micro_step_backward() -> None:
    source = _fill(TRAINER, backward="pass").replace(
        "            self.optimizer.step()", "            loss.backward()\n            self.optimizer.step()")
    assert _acc001(source) == []


@pytest.mark.parametrize("reduction,found", [('"batchmean"', 1), ('"mean"', 1), ('"sum"', 0)])
def test_gate_one_method_further_down_reads_the_loss_from_its_caller(reduction: str, found: int) -> None:
    source = textwrap.dedent(DISTILLER).replace("REDUCTION", reduction)
    findings = _acc001(source)
    assert len(findings) == found  # a sum over the samples owes no division
    if found:
        assert findings[0].location.row == _line_of(source, "loss.backward()")


def test_distiller_dividing_its_loss_is_clean() -> None:
    source = textwrap.dedent(DISTILLER).replace("REDUCTION", '"batchmean"').replace(
        "        loss.backward()", "        loss = loss / self.params.accumulation_steps\n        loss.backward()")
    assert _acc001(source) == []


@pytest.mark.parametrize("loss,found", [("loss", 1), ("loss / k", 0)])
def test_script_with_a_module_step_function(loss: str, found: int) -> None:
    source = _fill(STEPS) + _fill(SCRIPT_LOOP, loss)
    assert len(_acc001(source)) == found


@pytest.mark.parametrize("loss,found", [("loss", 1), ("loss / k", 0)])
def test_step_function_in_another_module(tmp_path: Path, loss: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "steps.py").write_text(_fill(STEPS))
    train = tmp_path / "train.py"
    train.write_text("from steps import optimize\n" + _fill(SCRIPT_LOOP, loss))
    findings = _acc001(train.read_text(), str(train))
    assert len(findings) == found
    if found:
        assert findings[0].filename.endswith("steps.py")
