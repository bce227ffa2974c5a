"""ACC012 on a step function that runs the whole window itself: a `train_step(batch)` called once
per outer iteration that loops over k micro-batches, backward in that loop, and steps after it is
accumulation done right (one step per call is one step per window). The same function with one
backward per call, dividing by k and stepping every call, is the bug. Script, trainer-class and
multi-module forms, each with its twin."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

WHOLE_WINDOW = """
    for x, y in batch.chunk(accum_steps):
        loss = F.mse_loss(model(x), y) / accum_steps
        loss.backward()
"""
ONE_MICRO_BATCH = """
    x, y = batch
    loss = F.mse_loss(model(x), y) / accum_steps
    loss.backward()
"""

SCRIPT = """
import torch.nn.functional as F

def train_step(model, opt, batch, accum_steps):
{body}
    opt.step()
    opt.zero_grad()

def fit(model, opt, loader, accum_steps):
    for batch in loader:
        train_step(model, opt, batch, accum_steps)
"""


def _trainer(body: str) -> str:
    inner = textwrap.indent(
        textwrap.dedent(body).replace("accum_steps", "self.accum_steps").replace("model(", "self.model("), "    "
    )
    return """
import torch.nn.functional as F

class Trainer:
    def __init__(self, model, opt, accum_steps):
        self.model, self.opt, self.accum_steps = model, opt, accum_steps

    def train_step(self, batch):
""" + textwrap.indent(inner, "    ") + """
        self.opt.step()
        self.opt.zero_grad()

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
"""


def test_a_step_function_that_runs_the_whole_window_is_clean():
    assert findings(SCRIPT.format(body=WHOLE_WINDOW.rstrip("\n"))) == []


def test_a_step_function_that_runs_one_micro_batch_and_steps_is_reported():
    source = SCRIPT.format(body=ONE_MICRO_BATCH.rstrip("\n"))
    assert findings(source) == [("ACC012", row(source, "train_step(model, opt, batch, accum_steps)", last=True))]


def test_a_trainer_step_method_that_runs_the_whole_window_is_clean():
    assert findings(_trainer(WHOLE_WINDOW)) == []


def test_a_trainer_step_method_that_runs_one_micro_batch_is_reported():
    source = _trainer(ONE_MICRO_BATCH)
    assert findings(source) == [("ACC012", row(source, "self.train_step(batch)"))]


DRIVER = """
from pkg.steps import train_step

def fit(model, opt, loader, accum_steps):
    for batch in loader:
        train_step(model, opt, batch, accum_steps)
"""


def _in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> list[tuple[str, int]]:
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    helper = SCRIPT.format(body=body.rstrip("\n")).split("def fit")[0]
    (tmp_path / "pkg" / "steps.py").write_text(textwrap.dedent(helper).lstrip())
    (tmp_path / "train.py").write_text(textwrap.dedent(DRIVER).lstrip())
    monkeypatch.chdir(tmp_path)
    return findings((tmp_path / "train.py").read_text(), "train.py")


def test_a_step_function_of_another_module_that_runs_the_whole_window_is_clean(tmp_path, monkeypatch):
    assert _in_project(tmp_path, monkeypatch, WHOLE_WINDOW) == []


def test_a_step_function_of_another_module_that_runs_one_micro_batch_is_reported(tmp_path, monkeypatch):
    assert _in_project(tmp_path, monkeypatch, ONE_MICRO_BATCH) == [("ACC012", row(DRIVER, "train_step(model"))]
