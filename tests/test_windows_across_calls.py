"""Windows spread over functions, and gates read as the code runs them:
- a step method that runs backward on every call and steps under its own `% k` test is one
  micro-step of a window whose loop is out of sight (an entry method);
- a loop that runs backward and calls a function that steps under its own window test has its
  step block in that call;
- `if <boundary>: ... else: continue` makes what follows it run once per window;
- a zeroing on a path that throws the micro-batch away (`...; continue`) is no per-micro-step zeroing.
Each in script, trainer-class and multi-module form, with the clean twin beside it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings as _findings, row as _row






def _in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str, driver: str) -> list[tuple[str, int]]:
    """`driver` as train.py beside `pkg/steps.py` holding `helper`; the findings of train.py."""
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "steps.py").write_text(textwrap.dedent(helper).lstrip())
    (tmp_path / "train.py").write_text(textwrap.dedent(driver).lstrip())
    monkeypatch.chdir(tmp_path)
    return _findings((tmp_path / "train.py").read_text(), "train.py")


# --- entry methods: the body is one micro-step ------------------------------------------------

ENTRY_SCRIPT = """
def train_step(model, opt, batch, i, k):
    loss = model(batch).mean() / k
    loss.backward()
    {zero_early}
    if (i + 1) % k == 0:
        opt.step()
        {zero_late}
    return loss.item()
"""

ENTRY_CLASS = """
class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k
        self.micro = 0

    def fit_batch(self, batch):
        self.micro += 1
        should_step = self.micro % self.k == 0
        loss = self.model(batch).mean() / self.k
        loss.backward()
        {zero_early}
        if should_step:
            self.opt.step()
            {zero_late}
        return loss.detach()
"""


@pytest.mark.parametrize("template, zero", [(ENTRY_SCRIPT, "opt.zero_grad()"), (ENTRY_CLASS, "self.opt.zero_grad()")])
def test_an_entry_method_that_zeroes_on_every_call_while_it_gates_the_step(template, zero):
    source = template.format(zero_early=zero, zero_late="pass")
    assert _findings(source) == [("ACC007", _row(source, zero))]


@pytest.mark.parametrize("template, zero", [(ENTRY_SCRIPT, "opt.zero_grad()"), (ENTRY_CLASS, "self.opt.zero_grad()")])
def test_an_entry_method_that_zeroes_after_its_step_is_clean(template, zero):
    assert _findings(template.format(zero_early="pass", zero_late=zero)) == []


def test_the_zeroing_fix_moves_it_into_the_entry_methods_step_block():
    source = textwrap.dedent(ENTRY_CLASS.format(zero_early="self.opt.zero_grad()", zero_late="pass")).lstrip()
    fixed = engine.fix_source(source, "t.py").fixed_source
    assert isinstance(fixed, str)
    assert _findings(fixed) == []
    lines = fixed.splitlines()
    assert lines.index("            self.opt.zero_grad()") > lines.index("            self.opt.step()")


def test_an_entry_method_in_another_module_is_checked_where_it_lives(tmp_path, monkeypatch):
    helper = ENTRY_CLASS.format(zero_early="self.opt.zero_grad()", zero_late="pass")
    (tmp_path / "trainer.py").write_text(textwrap.dedent(helper).lstrip())
    (tmp_path / "main.py").write_text("from trainer import Trainer\n\nfor batch in []:\n    Trainer(None, None, 4).fit_batch(batch)\n")
    monkeypatch.chdir(tmp_path)
    assert _findings((tmp_path / "trainer.py").read_text(), "trainer.py") == [("ACC007", _row(helper, "self.opt.zero_grad()"))]
    assert _findings((tmp_path / "main.py").read_text(), "main.py") == []


def test_an_entry_method_clipping_scaled_gradients():
    source = """
import torch

class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k
        self.scaler = torch.cuda.amp.GradScaler()

    def _run_batch(self, step, batch):
        loss = self.model(batch).mean() / self.k
        self.scaler.scale(loss).backward()
        if (step + 1) % self.k == 0:
            {unscale}
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.opt)
            self.scaler.update()
            self.opt.zero_grad()
"""
    bad = source.format(unscale="pass")
    assert _findings(bad) == [("ACC004", _row(bad, "clip_grad_norm_"))]
    assert _findings(source.format(unscale="self.scaler.unscale_(self.opt)")) == []


def test_a_function_with_backward_and_a_step_every_call_is_no_entry_method():
    # No window test around the step: each call is a whole update, nothing to report here.
    source = """
def train_step(model, opt, batch, i, log_every):
    opt.zero_grad()
    loss = model(batch).mean()
    loss.backward()
    opt.step()
    if i % log_every == 0:
        print(loss.item())
"""
    assert _findings(source) == []


# --- the step block inside a called function ------------------------------------------------

GATED_HELPER = """
def maybe_step(opt, i, k):
    if (i + 1) % k == 0:
        opt.step()
        opt.zero_grad()
"""

CALLEE_SCRIPT = GATED_HELPER + """

def train(model, opt, loader, k):
    for i, batch in enumerate(loader):
        {zero}
        loss = model(batch).mean() / k
        loss.backward()
        maybe_step(opt, i, k)
"""

CALLEE_CLASS = """
class Trainer:
    def __init__(self, model, opt, loader, k):
        self.model, self.opt, self.loader, self.k = model, opt, loader, k

    def _maybe_step(self, i):
        if (i + 1) % self.k == 0:
            self.opt.step()
            self.opt.zero_grad()

    def train_epoch(self):
        for i, batch in enumerate(self.loader):
            {zero}
            loss = self.model(batch).mean() / self.k
            loss.backward()
            self._maybe_step(i)
"""


# Both loops walk an epoch's batches and the called test has no end clause: ACC005 at the call.
_CALLS = {CALLEE_SCRIPT: "maybe_step(opt, i, k)", CALLEE_CLASS: "self._maybe_step(i)"}


@pytest.mark.parametrize("template, zero", [(CALLEE_SCRIPT, "opt.zero_grad()"), (CALLEE_CLASS, "self.opt.zero_grad()")])
def test_zeroing_every_micro_step_while_a_called_function_gates_the_step(template, zero):
    source = template.format(zero=zero)
    assert _findings(source) == [
        ("ACC005", _row(source, _CALLS[template], last=True)), ("ACC007", _row(source, zero, last=True))
    ]
    # The step block is in the callee: moving the zeroing beside the call would change nothing.
    result = engine.check_source(textwrap.dedent(source).lstrip(), "t.py")
    assert [f.fix for f in result.findings if f.code == "ACC007"] == [None]


@pytest.mark.parametrize("template", [CALLEE_SCRIPT, CALLEE_CLASS])
def test_a_loop_whose_called_step_function_keeps_the_window_only_drops_its_tail(template):
    source = template.format(zero="pass")
    assert _findings(source) == [("ACC005", _row(source, _CALLS[template], last=True))]


def test_a_called_step_function_in_another_module(tmp_path, monkeypatch):
    driver = "from pkg.steps import maybe_step\n" + CALLEE_SCRIPT[len(GATED_HELPER):]
    bad = driver.format(zero="opt.zero_grad()")
    tail = ("ACC005", _row(bad, "maybe_step(opt, i, k)", last=True))
    assert _in_project(tmp_path, monkeypatch, GATED_HELPER, bad) == [tail, ("ACC007", _row(bad, "opt.zero_grad()", last=True))]
    assert _in_project(tmp_path, monkeypatch, GATED_HELPER, driver.format(zero="pass")) == [tail]


def test_a_callee_gate_on_its_own_local_is_not_read_at_the_call(tmp_path, monkeypatch):
    # `k` is computed inside the helper from something the loop does not see: no window is known.
    helper = """
def maybe_step(opt, i, cfg):
    k = cfg.accum
    if (i + 1) % k == 0:
        opt.step()
"""
    driver = """
from pkg.steps import maybe_step

def train(model, opt, loader, cfg):
    for i, batch in enumerate(loader):
        opt.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        maybe_step(opt, i, cfg)
"""
    assert _in_project(tmp_path, monkeypatch, helper, driver) == []


def test_a_callee_that_also_steps_ungated_keeps_the_loop_without_a_window():
    source = """
def step_both(opt, opt_head, i, k):
    if (i + 1) % k == 0:
        opt.step()
    opt_head.step()


def train(model, opt, opt_head, loader, k):
    for i, batch in enumerate(loader):
        opt.zero_grad()
        opt_head.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        step_both(opt, opt_head, i, k)
"""
    assert _findings(source) == []


# --- `else: continue` -----------------------------------------------------------------------

ELSE_CONTINUE = """
import torch

def train(model, opt, loader, k, scheduler):
    scaler = torch.cuda.amp.GradScaler()
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        scaler.scale(loss).backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            scaler.step(opt)
            opt.zero_grad()
        else:
            {else_branch}
        scaler.update()
"""

ELSE_CONTINUE_CLASS = """
import torch

class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k
        self.scaler = torch.cuda.amp.GradScaler()

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean() / self.k
            self.scaler.scale(loss).backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.scaler.step(self.opt)
                self.opt.zero_grad()
            else:
                {else_branch}
            self.scaler.update()
"""


@pytest.mark.parametrize("template", [ELSE_CONTINUE, ELSE_CONTINUE_CLASS])
def test_what_follows_an_else_continue_runs_once_per_window(template):
    assert _findings(template.format(else_branch="continue")) == []


@pytest.mark.parametrize("template", [ELSE_CONTINUE, ELSE_CONTINUE_CLASS])
def test_without_the_continue_the_update_runs_every_micro_step(template):
    source = template.format(else_branch="pass")
    assert _findings(source) == [("ACC008", _row(source, "scaler.update()"))]


def test_else_continue_in_another_modules_trainer(tmp_path, monkeypatch):
    trainer = ELSE_CONTINUE_CLASS.format(else_branch="continue")
    driver = "from pkg.steps import Trainer\n\nTrainer(None, None, 4).train_epoch([])\n"
    assert _in_project(tmp_path, monkeypatch, trainer, driver) == []
    assert _findings(textwrap.dedent(trainer).lstrip(), "pkg/steps.py") == []


# --- a zeroing on a path that throws the micro-batch away ---------------------------------------

BAIL_OUT = """
import torch

def train(model, opt, loader, k):
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        if not torch.isfinite(loss):
            opt.zero_grad()
            {leave}
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""

BAIL_OUT_CLASS = """
import torch

class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean() / self.k
            if not torch.isfinite(loss):
                self.opt.zero_grad()
                {leave}
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


@pytest.mark.parametrize("template", [BAIL_OUT, BAIL_OUT_CLASS])
def test_zeroing_on_a_path_that_skips_the_micro_batch_is_clean(template):
    assert _findings(template.format(leave="continue")) == []


@pytest.mark.parametrize("template", [BAIL_OUT, BAIL_OUT_CLASS])
def test_zeroing_under_a_plain_condition_is_still_reported(template):
    source = template.format(leave="pass")
    assert _findings(source) == [("ACC007", _row(source, "opt.zero_grad()"))]


def test_bail_out_zeroing_in_another_modules_trainer(tmp_path, monkeypatch):
    trainer = BAIL_OUT_CLASS.format(leave="continue")
    driver = "from pkg.steps import Trainer\n\nTrainer(None, None, 4).train_epoch([])\n"
    assert _in_project(tmp_path, monkeypatch, trainer, driver) == []
    bad = BAIL_OUT_CLASS.format(leave="pass")
    assert _findings(textwrap.dedent(bad).lstrip(), "pkg/steps.py") == [("ACC007", _row(bad, "self.opt.zero_grad()"))]
