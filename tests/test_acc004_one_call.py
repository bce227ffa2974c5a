"""ACC004 in a function without a loop: one call runs the scaled backward, clips and steps the
GradScaler (a `_run_batch` called once per batch). Nothing between its backward and its clip can
unscale, wherever it is called from. A function that only clips and steps (its caller ran the
backward, and may have unscaled) stays silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings as _findings, row as _row

SCRIPT = """
import torch

def run_batch(model, opt, scaler, batch):
    opt.zero_grad()
    loss = model(batch).mean()
    scaler.scale(loss).backward()
    {unscale}
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    return loss.item()
"""

TRAINER = """
import torch

class Trainer:
    def __init__(self, model, opt, use_amp):
        self.model, self.opt, self.use_amp = model, opt, use_amp
        self.scaler = torch.cuda.amp.GradScaler()

    def _run_batch(self, batch):
        self.opt.zero_grad()
        loss = self.model(batch).mean()
        if self.use_amp:
            self.scaler.scale(loss).backward()
            {unscale}
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
        return loss.item()
"""






@pytest.mark.parametrize("template, unscale", [(SCRIPT, "scaler.unscale_(opt)"), (TRAINER, "self.scaler.unscale_(self.opt)")])
def test_one_call_that_clips_its_own_scaled_gradients(template, unscale):
    source = template.format(unscale="pass")
    assert _findings(source) == [("ACC004", _row(source, "clip_grad_norm_"))]
    fixed = engine.fix_source(textwrap.dedent(source).lstrip(), "t.py").fixed_source
    assert isinstance(fixed, str) and unscale in fixed
    assert _findings(fixed) == []


@pytest.mark.parametrize("template, unscale", [(SCRIPT, "scaler.unscale_(opt)"), (TRAINER, "self.scaler.unscale_(self.opt)")])
def test_one_call_that_unscales_before_clipping_is_clean(template, unscale):
    assert _findings(template.format(unscale=unscale)) == []


def test_in_a_module_the_driver_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "steps.py").write_text(textwrap.dedent(SCRIPT.format(unscale="pass")).lstrip())
    (tmp_path / "main.py").write_text("from steps import run_batch\n\nfor batch in []:\n    run_batch(None, None, None, batch)\n")
    monkeypatch.chdir(tmp_path)
    assert [code for code, _ in _findings((tmp_path / "steps.py").read_text(), "steps.py")] == ["ACC004"]
    assert _findings((tmp_path / "main.py").read_text(), "main.py") == []


def test_a_function_that_clips_gradients_its_caller_made_is_silent():
    # The caller ran the backward and may have unscaled before calling: not in sight here.
    source = """
import torch

def optimizer_step(model, opt, scaler):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
"""
    assert _findings(source) == []


STEP_FUNCTION = """
import torch

def optimizer_step(model, opt, scaler):
    {unscale}
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
"""

LOOP = """
def train(model, opt, scaler, loader):
    for batch in loader:
        loss = model(batch).mean()
        scaler.scale(loss).backward()
        {before_call}
        optimizer_step(model, opt, scaler)
"""

TRAINER_CALLING = """
import torch

class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.scaler = torch.cuda.amp.GradScaler()

    def _optimizer_step(self):
        {unscale}
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.opt.zero_grad()

    def train_epoch(self, loader):
        for batch in loader:
            self.scaler.scale(self.model(batch).mean()).backward()
            self._optimizer_step()
"""


def test_a_called_step_function_clips_the_loops_scaled_gradients():
    source = STEP_FUNCTION.format(unscale="pass") + LOOP.format(before_call="pass")
    assert _findings(source) == [("ACC004", _row(source, "clip_grad_norm_"))]
    assert _findings(STEP_FUNCTION.format(unscale="scaler.unscale_(opt)") + LOOP.format(before_call="pass")) == []
    # The loop unscales before calling it: clean.
    assert _findings(STEP_FUNCTION.format(unscale="pass") + LOOP.format(before_call="scaler.unscale_(opt)")) == []


def test_a_trainer_method_that_clips_after_the_loops_scaled_backward():
    bad = TRAINER_CALLING.format(unscale="pass")
    assert _findings(bad) == [("ACC004", _row(bad, "clip_grad_norm_"))]
    assert _findings(TRAINER_CALLING.format(unscale="self.scaler.unscale_(self.opt)")) == []


def test_a_step_function_in_another_module_is_reported_at_its_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for unscale, expected in [("pass", True), ("scaler.unscale_(opt)", False)]:
        (tmp_path / "steps.py").write_text(textwrap.dedent(STEP_FUNCTION.format(unscale=unscale)).lstrip())
        source = "from steps import optimizer_step\n" + textwrap.dedent(LOOP.format(before_call="pass"))
        (tmp_path / "train.py").write_text(source)
        monkeypatch.chdir(tmp_path)
        found = _findings(source, "train.py")
        assert found == ([("ACC004", _row(source, "optimizer_step(model, opt, scaler)"))] if expected else [])
