"""A project optimizer class whose `step(loss, ...)` runs backward on every call and steps its
optimizers (often each of a list, `for opt in self.optimizers: scaler.step(opt)`) only under a
`% k` gate. Its body is one micro-step; the loss is whatever the driver hands it, read at the
driver's call, in the same module or in a module that imports the class. Each form has a clean
twin in which the driver divides by k."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings_of
from snippets import findings, row

SELECT = ("ACC001",)

STEPPER = """
import torch


class Stepper:
    def __init__(self, args, model):
        self.grad_accum = args.grad_accum
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.optimizers = [self.optimizer]
        self.scaler = torch.cuda.amp.GradScaler()

    def step(self, loss, step, global_step):
        self.scaler.scale(loss).backward()
        if (global_step + 1) % self.grad_accum == 0:
            self.scaler.unscale_(self.optimizer)
            {stepping}
            self.scaler.update()
            self.optimizer.zero_grad()
"""
EACH = "for optimizer in self.optimizers:\n                self.scaler.step(optimizer)"
ONE = "self.scaler.step(self.optimizer)"

DRIVER = """
def main(args, model, loader):
    stepper = Stepper(args, model)
    global_step = 0
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])
            {scale}
            stepper.step(loss, step, global_step)
            global_step += 1
"""
UNDIVIDED = "pass"
DIVIDED = "loss = loss / args.grad_accum"


def _stepper(stepping: str) -> str:
    return textwrap.dedent(STEPPER).lstrip().replace("{stepping}", stepping)


def _driver(scale: str) -> str:
    return textwrap.dedent(DRIVER).replace("{scale}", scale)


def _acc001(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC001"]


@pytest.mark.parametrize("stepping", [EACH, ONE], ids=["each-optimizer", "one-optimizer"])
def test_undivided_loss_handed_to_the_stepper_in_one_module(stepping):
    source = _stepper(stepping) + _driver(UNDIVIDED)
    assert _acc001(source) == [row(source, "self.scaler.scale(loss).backward()")]


@pytest.mark.parametrize("stepping", [EACH, ONE], ids=["each-optimizer", "one-optimizer"])
def test_the_driver_dividing_by_k_is_clean(stepping):
    assert _acc001(_stepper(stepping) + _driver(DIVIDED)) == []


def _project(root: Path, driver: str, stepping: str = EACH) -> Path:
    (root / ".git").mkdir()
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "optim.py").write_text(_stepper(stepping))
    (root / "train.py").write_text("import torch\nfrom pkg.optim import Stepper\n" + driver)
    return root / "pkg" / "optim.py"


def _checked(path: Path) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in findings_of(path.read_bytes(), path=str(path), select=SELECT)]


def test_a_stepper_class_driven_from_another_module(tmp_path):
    optim = _project(tmp_path, _driver(UNDIVIDED))
    assert _checked(optim) == [("ACC001", row(optim.read_text(), "self.scaler.scale(loss).backward()"))]


def test_a_driver_in_another_module_that_divides_by_k_is_clean(tmp_path):
    assert _checked(_project(tmp_path, _driver(DIVIDED))) == []


def test_drivers_that_disagree_leave_the_scale_unknown(tmp_path):
    optim = _project(tmp_path, _driver(UNDIVIDED))
    (tmp_path / "finetune.py").write_text("import torch\nfrom pkg.optim import Stepper\n" + _driver(DIVIDED))
    assert _checked(optim) == []


def test_a_stepper_nobody_calls_stays_silent(tmp_path):
    optim = _project(tmp_path, "def main():\n    pass\n")
    assert _checked(optim) == []


# --- the stepping loop over optimizers in a plain script ------------------------------------------

SCRIPT = """
import torch

def train(model, loader, optimizers, k):
    for i, batch in enumerate(loader):
        loss = model(batch).mean(){scale}
        loss.backward()
        if (i + 1) % k == 0:
            for opt in optimizers:
                opt.step()
                opt.zero_grad()
"""


def test_a_window_that_steps_each_optimizer_in_a_loop():
    source = SCRIPT.replace("{scale}", "")
    assert _acc001(source) == [row(source, "loss.backward()")]
    assert _acc001(SCRIPT.replace("{scale}", " / k")) == []


def test_a_loop_over_data_inside_the_gate_is_no_loop_over_optimizers():
    # The inner loop runs more micro-batches, each with its own step: not one window's step.
    source = SCRIPT.replace("{scale}", "").replace("for opt in optimizers:", "for extra in loader:").replace(
        "opt.step()", "optimizers[0].step()").replace("opt.zero_grad()", "optimizers[0].zero_grad()")
    assert _acc001(source) == []


# --- the loss rescaled on one branch only ---------------------------------------------------------

BRANCH = """
import torch

def train(model, loader, optimizer, k, full_size):
    for i, batch in enumerate(loader):
        loss = model(batch).mean()
        if {test}:
            weight = {factor}
            loss = loss * weight
        loss.backward()
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_loss_rescaled_only_for_short_batches_is_unscaled_on_the_other_path():
    source = BRANCH.replace("{test}", "len(batch) < full_size").replace("{factor}", "(len(batch) / full_size)")
    found = engine.check_source(textwrap.dedent(source).lstrip(), "t.py", select=SELECT).findings
    assert [f.location.row for f in found] == [row(source, "loss.backward()")]
    assert "on one of the branches" in found[0].message
    assert found[0].fix is None  # a division at the call would also divide the rescaled path


def test_a_rescale_under_a_test_of_k_counts_as_scaled():
    # `if k > 1: loss = loss * (1 / k)`: the window's own division, taken whenever it matters
    assert _acc001(BRANCH.replace("{test}", "k > 1").replace("{factor}", "1 / k")) == []


def test_a_rescale_under_a_test_of_its_factor_counts_as_scaled():
    # `if weight is not None: loss = loss * weight`: a setting, perhaps the one holding 1/k
    source = BRANCH.replace("            weight = {factor}\n", "").replace("{test}", "batch.weight is not None")
    assert _acc001(source.replace("loss * weight", "loss * batch.weight")) == []


# --- a helper with a shorter return on another branch --------------------------------------------

SHORT_RETURN = """
import torch

def train(model, loader, optimizer, k):
    def predict(batch, return_loss=False):
        pred = model(batch["x"])
        if return_loss:
            loss = torch.nn.functional.mse_loss(pred, batch["y"]){scale}
            return pred, batch["y"], loss
        return pred, batch["y"]

    for i, batch in enumerate(loader):
        pred, target, loss = predict(batch, return_loss=True)
        loss.backward()
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_return_without_the_loss_element_is_not_the_one_unpacked():
    source = SHORT_RETURN.replace("{scale}", "")
    assert _acc001(source) == [row(source, "loss.backward()")]
    assert _acc001(SHORT_RETURN.replace("{scale}", " / k")) == []
