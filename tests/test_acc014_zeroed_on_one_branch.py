"""ACC014 when only one branch of a setting's `if` zeroes (`if args.fp16: optimizer.zero_grad()
... else: loss.backward()`, with `zero_grad` left out of the other branch): with that setting off,
the gradients add up across every update. Twins: both branches zero; the test changes every
iteration (zeroing at a window's start is accumulation); the other branch runs no backward; the
other branch's backward belongs to an engine that zeroes itself. Forms: a script, a trainer class,
and the two backward paths in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
def train(model, loader, optimizer, scaler, args):
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        if TEST:
            optimizer.zero_grad()
            scaler.scale(loss).backward()
        else:
            OTHER
        optimizer.step()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, scaler, fp16):
        self.model = model
        self.optimizer = optimizer
        self.scaler = scaler
        self.fp16 = fp16

    def fit(self, loader):
        for step, batch in enumerate(loader):
            loss = self.model(batch).mean()
            if TEST:
                self.optimizer.zero_grad()
                self.scaler.scale(loss).backward()
            else:
                OTHER
            self.optimizer.step()
"""

STEPS = """
def fp16_backward(loss, optimizer, scaler):
    optimizer.zero_grad()
    scaler.scale(loss).backward()


def fp32_backward(loss, optimizer):
    ZERO
    loss.backward()
"""

MAIN = """
from steps import fp16_backward, fp32_backward


def train(model, loader, optimizer, scaler, args):
    for batch in loader:
        loss = model(batch).mean()
        if args.fp16:
            fp16_backward(loss, optimizer, scaler)
        else:
            fp32_backward(loss, optimizer)
        optimizer.step()
"""


def _acc014(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC014", path=path)


def _fill(template: str, test: str, other: str) -> str:
    text = textwrap.dedent(template)
    indent = next(line for line in text.splitlines() if "OTHER" in line).split("OTHER")[0]
    return text.replace("TEST", test).replace("OTHER", other.replace("\n", "\n" + indent))


SELF = {SCRIPT: "", TRAINER: "self."}


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_the_branch_without_zeroing_is_reported(template: str) -> None:
    own = SELF[template]
    test = "args.fp16" if template is SCRIPT else "self.fp16"
    source = _fill(template, test, "loss.backward()")
    found = _acc014(source)
    assert len(found) == 1
    assert f"zeroed only when `{test}` holds" in found[0].message
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if f"{own}optimizer.step()" in line)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("test,other", [
    ("FP16", "OPT.zero_grad()\nloss.backward()"),  # both branches zero
    ("step % 4 == 0", "loss.backward()"),  # zeroing at the start of each window of 4
    ("FP16", "pass"),  # no backward on the other branch
    ("FP16", "model_engine.backward(loss)"),  # a DeepSpeed engine zeroes by itself
])
def test_clean_twins(template: str, test: str, other: str) -> None:
    own = SELF[template]
    test = test.replace("FP16", "args.fp16" if template is SCRIPT else "self.fp16")
    assert _acc014(_fill(template, test, other.replace("OPT", f"{own}optimizer"))) == []


@pytest.mark.parametrize("zero,found", [("pass", 1), ("optimizer.zero_grad()", 0)])
def test_backward_paths_in_another_module(tmp_path: Path, zero: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "steps.py").write_text(textwrap.dedent(STEPS).replace("ZERO", zero))
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(MAIN))
    assert len(_acc014(train.read_text(), str(train))) == found
