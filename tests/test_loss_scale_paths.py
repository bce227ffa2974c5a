"""How the loss is scaled on its way to backward, read from the code:
- a sum-reduced loss (`reduction='sum'` on the criterion or the call, `.sum()` over a fresh
  per-element loss) is already scaled for the window: no ACC001, no `/ k` fix;
- a division by a running count of micro-steps (`loss / (i + 1)`, `loss / n_seen`) is no division
  by k: ACC001, with no fix (a `/ k` beside it would still weigh the micro-batches unequally);
- every branch that produces the loss must be scaled: a divided branch does not silence an
  undivided one (ACC001 without a fix: dividing at the backward would scale the other twice).
Each in script, trainer-class and multi-module form, with the clean twin beside it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings_of, row


def _acc001(source: str, path: str = "t.py") -> list[tuple[int, str, bool]]:
    """ACC001 findings as (row, message, has a fix)."""
    found = findings_of(textwrap.dedent(source).lstrip(), "ACC001", path=path)
    return [(f.location.row, f.message, f.fix is not None) for f in found]


def _in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str, driver: str) -> list[tuple[int, str, bool]]:
    """`driver` as train.py beside `pkg/losses.py` holding `helper`; the ACC001 findings of train.py."""
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "losses.py").write_text(textwrap.dedent(helper).lstrip())
    (tmp_path / "train.py").write_text(textwrap.dedent(driver).lstrip())
    monkeypatch.chdir(tmp_path)
    return _acc001((tmp_path / "train.py").read_text(), "train.py")


# --- sum-reduced losses ---------------------------------------------------------------------------

SCRIPT = """
import torch.nn.functional as F
from torch import nn

def train(model, loader, opt, k):
    criterion = {criterion}
    for i, (x, y) in enumerate(loader):
        loss = {loss}
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""

TRAINER = """
from torch import nn
import torch.nn.functional as F

class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k
        self.criterion = {criterion}

    def train_epoch(self, loader):
        for i, (x, y) in enumerate(loader):
            loss = {loss}
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""

SUMMED = [
    ("nn.MSELoss(reduction='sum')", "criterion(model(x), y)"),
    ("nn.MSELoss(size_average=False)", "criterion(model(x), y)"),
    ("None", "F.cross_entropy(model(x), y, reduction='sum')"),
    ("None", "((model(x) - y) * (model(x) - y)).sum()"),
    ("nn.MSELoss(reduction='none')", "criterion(model(x), y).sum()"),
]
MEAN = [
    ("nn.MSELoss()", "criterion(model(x), y)"),
    ("None", "F.cross_entropy(model(x), y)"),
    ("nn.MSELoss(reduction='none')", "criterion(model(x), y).sum(-1).mean()"),
    ("nn.MSELoss()", "criterion(model(x), y).sum()"),  # the sum of one mean value is that mean
]


@pytest.mark.parametrize("criterion, loss", SUMMED)
def test_a_sum_reduced_loss_needs_no_division(criterion, loss):
    assert _acc001(SCRIPT.format(criterion=criterion, loss=loss)) == []
    assert _acc001(TRAINER.format(criterion=criterion, loss=loss.replace("criterion(", "self.criterion(").replace("model(", "self.model("))) == []


@pytest.mark.parametrize("criterion, loss", MEAN)
def test_a_mean_reduced_loss_is_still_reported_with_its_fix(criterion, loss):
    source = SCRIPT.format(criterion=criterion, loss=loss)
    assert _acc001(source) == [(row(source, "loss.backward()"), _acc001(source)[0][1], True)]
    trainer = TRAINER.format(criterion=criterion, loss=loss.replace("criterion(", "self.criterion(").replace("model(", "self.model("))
    assert [(r, fixed) for r, _, fixed in _acc001(trainer)] == [(row(trainer, "loss.backward()"), True)]


def test_a_criterion_built_more_than_one_way_is_not_known_to_be_a_mean():
    source = SCRIPT.format(criterion="nn.MSELoss(reduction=reduction)", loss="criterion(model(x), y)")
    assert _acc001(source) == []


SUM_HELPER = """
import torch.nn.functional as F

def window_loss(model, x, y):
    return F.mse_loss(model(x), y, reduction={reduction})
"""

SUM_DRIVER = """
from pkg.losses import window_loss

def train(model, loader, opt, k):
    for i, (x, y) in enumerate(loader):
        loss = window_loss(model, x, y)
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_a_sum_reduced_loss_from_another_module(tmp_path, monkeypatch):
    assert _in_project(tmp_path, monkeypatch, SUM_HELPER.format(reduction="'sum'"), SUM_DRIVER) == []


def test_a_mean_reduced_loss_from_another_module_is_reported(tmp_path, monkeypatch):
    found = _in_project(tmp_path, monkeypatch, SUM_HELPER.format(reduction="'mean'"), SUM_DRIVER)
    assert [(r, fixed) for r, _, fixed in found] == [(row(SUM_DRIVER, "loss.backward()"), True)]


def test_the_fix_is_not_offered_on_a_sum_reduced_loss():
    source = textwrap.dedent(SCRIPT.format(criterion="None", loss="F.mse_loss(model(x), y, reduction='sum')")).lstrip()
    assert engine.fix_source(source, "t.py").fixed_source is None


# --- division by a running count ------------------------------------------------------------------

COUNT_SCRIPT = """
import torch.nn.functional as F

def train(model, loader, opt, k):
    n_seen = 0
    for i, (x, y) in enumerate(loader):
        n_seen += 1
        loss = F.mse_loss(model(x), y) / {divisor}
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
            {reset}
"""

COUNT_TRAINER = """
import torch.nn.functional as F

class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k

    def train_epoch(self, loader):
        micro = 0
        for step, (x, y) in enumerate(loader):
            micro += 1
            loss = F.mse_loss(self.model(x), y)
            loss = loss / {divisor}
            loss.backward()
            if (step + 1) % self.k == 0 or step + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


@pytest.mark.parametrize("divisor, reset", [("n_seen", "pass"), ("n_seen", "n_seen = 0"), ("(i + 1)", "pass")])
def test_a_running_count_is_no_division_by_k(divisor, reset):
    source = COUNT_SCRIPT.format(divisor=divisor, reset=reset)
    [(line, message, fixed)] = _acc001(source)
    assert line == row(source, "loss.backward()") and not fixed
    assert "running count of micro-steps" in message and divisor.strip("()") in message


@pytest.mark.parametrize("divisor", ["micro", "(step + 1)"])
def test_a_running_count_in_a_trainer_method(divisor):
    source = COUNT_TRAINER.format(divisor=divisor)
    [(line, message, fixed)] = _acc001(source)
    assert line == row(source, "loss.backward()") and not fixed and "running count" in message


@pytest.mark.parametrize("divisor", ["k", "(n_seen * k)", "n_tokens"])
def test_a_division_by_k_or_by_an_unknown_size_stays_silent(divisor):
    assert _acc001(COUNT_SCRIPT.format(divisor=divisor, reset="pass")) == []
    assert _acc001(COUNT_TRAINER.format(divisor=divisor.replace("k", "self.k").replace("n_seen", "micro"))) == []


def test_a_count_of_another_loop_is_some_other_division():
    # `t` counts time steps inside one micro-step, not micro-steps: silent (any division counts).
    source = """
    import torch.nn.functional as F

    def train(model, loader, opt, k):
        for i, (x, y) in enumerate(loader):
            loss = 0.0
            for t in range(x.size(1)):
                loss = loss + F.mse_loss(model(x[:, t]), y[:, t]) / (t + 1)
            loss.backward()
            if (i + 1) % k == 0:
                opt.step()
                opt.zero_grad()
    """
    assert _acc001(source) == []


COUNT_HELPER = """
import torch.nn.functional as F

def weighted(model, x, y, seen):
    return F.mse_loss(model(x), y) / {divisor}
"""

COUNT_DRIVER = """
from pkg.losses import weighted

def train(model, loader, opt, k):
    for i, (x, y) in enumerate(loader):
        loss = weighted(model, x, y, i + 1)
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_a_helper_dividing_by_what_it_is_handed_stays_silent(tmp_path, monkeypatch):
    # The helper's divisor is a parameter: what the caller hands it is not followed (silent).
    assert _in_project(tmp_path, monkeypatch, COUNT_HELPER.format(divisor="seen"), COUNT_DRIVER) == []


def test_a_helper_returning_an_undivided_loss_is_reported(tmp_path, monkeypatch):
    found = _in_project(tmp_path, monkeypatch, COUNT_HELPER.format(divisor="1.0").replace(" / 1.0", ""), COUNT_DRIVER)
    assert [(r, fixed) for r, _, fixed in found] == [(row(COUNT_DRIVER, "loss.backward()"), True)]


# --- every branch that produces the loss ------------------------------------------------------------

BRANCH_SCRIPT = """
import torch.nn.functional as F

def train(model, loader, opt, k, use_aux):
    for i, (x, y) in enumerate(loader):
        if {test}:
            loss = F.mse_loss(model(x), y){first}
        else:
            loss = F.l1_loss(model(x), y){second}
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""

BRANCH_TRAINER = """
import torch.nn.functional as F

class Trainer:
    def __init__(self, model, opt, k, use_aux):
        self.model, self.opt, self.k, self.use_aux = model, opt, k, use_aux

    def train_epoch(self, loader):
        for i, (x, y) in enumerate(loader):
            loss = F.mse_loss(self.model(x), y){first}
            if {test}:
                loss = F.l1_loss(self.model(x), y){second}
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


@pytest.mark.parametrize("template, test, k", [
    (BRANCH_SCRIPT, "use_aux", "k"), (BRANCH_SCRIPT, "i % 2 == 0", "k"), (BRANCH_TRAINER, "self.use_aux", "self.k"),
])
@pytest.mark.parametrize("divided", ["first", "second"])
def test_a_divided_branch_does_not_silence_an_undivided_one(template, test, k, divided):
    parts = {"first": "", "second": "", divided: f" / {k}"}
    source = template.format(test=test, **parts)
    [(line, message, fixed)] = _acc001(source)
    assert line == row(source, "loss.backward()") and not fixed
    assert "one of the branches" in message


@pytest.mark.parametrize("template, test, k", [(BRANCH_SCRIPT, "use_aux", "k"), (BRANCH_TRAINER, "self.use_aux", "self.k")])
def test_every_branch_divided_is_clean(template, test, k):
    assert _acc001(template.format(test=test, first=f" / {k}", second=f" / {k}")) == []


def test_branches_chosen_by_k_itself_are_clean():
    # `if k > 1:` divide, else not: without accumulation no division is owed.
    assert _acc001(BRANCH_SCRIPT.format(test="k > 1", first=" / k", second="")) == []


def test_a_rescale_under_a_setting_is_not_a_second_branch():
    source = """
    import torch.nn.functional as F

    def train(model, loader, opt, k, accumulate):
        for i, (x, y) in enumerate(loader):
            loss = F.mse_loss(model(x), y)
            if accumulate:
                loss = loss / k
            loss.backward()
            if (i + 1) % k == 0:
                opt.step()
                opt.zero_grad()
    """
    assert _acc001(source) == []


def test_a_branch_that_leaves_the_micro_step_does_not_reach_backward():
    source = """
    import torch.nn.functional as F

    def train(model, loader, opt, k, bad):
        for i, (x, y) in enumerate(loader):
            loss = F.mse_loss(model(x), y) / k
            if bad(x):
                loss = F.mse_loss(model(x), y)
                continue
            loss.backward()
            if (i + 1) % k == 0:
                opt.step()
                opt.zero_grad()
    """
    assert _acc001(source) == []


BRANCH_HELPER = """
import torch.nn.functional as F

def compute_loss(model, x, y, k, use_aux):
    if use_aux:
        return F.mse_loss(model(x), y) / k
    return F.l1_loss(model(x), y){second}
"""

BRANCH_DRIVER = """
from pkg.losses import compute_loss

def train(model, loader, opt, k, use_aux):
    for i, (x, y) in enumerate(loader):
        loss = compute_loss(model, x, y, k, use_aux)
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_a_helper_returning_an_undivided_branch_is_reported(tmp_path, monkeypatch):
    found = _in_project(tmp_path, monkeypatch, BRANCH_HELPER.format(second=""), BRANCH_DRIVER)
    assert [(r, fixed) for r, _, fixed in found] == [(row(BRANCH_DRIVER, "loss.backward()"), False)]


def test_a_helper_dividing_on_every_return_is_clean(tmp_path, monkeypatch):
    assert _in_project(tmp_path, monkeypatch, BRANCH_HELPER.format(second=" / k"), BRANCH_DRIVER) == []


# --- a loss handed to the function that runs backward ----------------------------------------------

HANDED_SCRIPT = """
def backward_step(loss, scaler):
    scaler.scale(loss).backward()


def train(model, loader, opt, scaler, k, crit):
    for i, (x, y) in enumerate(loader):
        loss = crit(model(x), y)
        backward_step({handed}, scaler)
        if (i + 1) % k == 0 or i + 1 == len(loader):
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
"""

HANDED_TRAINER = """
class Trainer:
    def __init__(self, model, opt, k, crit):
        self.model, self.opt, self.k, self.crit = model, opt, k, crit

    def _backward_step(self, loss, batch_idx):
        loss.backward()
        if (batch_idx + 1) % self.k == 0:
            self.opt.step()
            self.opt.zero_grad()

    def train_epoch(self, loader):
        for batch_idx, (x, y) in enumerate(loader):
            loss = self.crit(self.model(x), y)
            self._backward_step({handed}, batch_idx)
"""


def test_an_undivided_loss_handed_to_a_backward_helper_is_reported():
    source = HANDED_SCRIPT.format(handed="loss")
    [(line, message, _)] = _acc001(source)
    assert line == row(source, "scaler.scale(loss).backward()") and "times too large" in message


def test_a_divided_loss_handed_to_a_backward_helper_is_clean():
    assert _acc001(HANDED_SCRIPT.format(handed="loss / k")) == []


def test_an_undivided_loss_handed_to_a_step_method_that_keeps_its_window():
    source = HANDED_TRAINER.format(handed="loss")
    assert _acc001(source) == [(row(source, "loss.backward()"), _acc001(source)[0][1], True)]
    fixed = engine.fix_source(textwrap.dedent(source).lstrip(), "t.py").fixed_source
    assert isinstance(fixed, str) and "(loss / self.k).backward()" in fixed


def test_a_divided_loss_handed_to_a_step_method_is_clean():
    assert _acc001(HANDED_TRAINER.format(handed="loss / self.k")) == []


def test_callers_that_hand_differently_scaled_losses_leave_it_unknown():
    source = HANDED_TRAINER.format(handed="loss") + """
    def warm_up(self, x, y):
        self._backward_step(self.crit(self.model(x), y) / self.k, 0)
"""
    assert _acc001(source) == []


HANDED_HELPER = """
def backward_step(loss, scaler):
    scaler.scale(loss).backward()
"""

HANDED_DRIVER = """
from pkg.losses import backward_step

def train(model, loader, opt, scaler, k, crit):
    for i, (x, y) in enumerate(loader):
        loss = crit(model(x), y)
        backward_step({handed}, scaler)
        if (i + 1) % k == 0 or i + 1 == len(loader):
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
"""


def _project_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handed: str) -> list[tuple[str, int, str]]:
    """ACC001 findings of train.py as (file, row, message): the one in the helper module keeps its file."""
    _in_project(tmp_path, monkeypatch, HANDED_HELPER, HANDED_DRIVER.format(handed=handed))
    result = engine.check_source((tmp_path / "train.py").read_text(), "train.py")
    return [(Path(f.filename).name, f.location.row, f.message) for f in result.findings if f.code == "ACC001"]


def test_an_undivided_loss_handed_to_a_helper_of_another_module(tmp_path, monkeypatch):
    [(name, line, message)] = _project_findings(tmp_path, monkeypatch, "loss")
    assert (name, line) == ("losses.py", row(HANDED_HELPER, "backward()")) and "from `train`" in message


def test_a_divided_loss_handed_to_a_helper_of_another_module_is_clean(tmp_path, monkeypatch):
    assert _project_findings(tmp_path, monkeypatch, "loss / k") == []


@pytest.mark.parametrize("backward, reported", [("model.backward(loss)", False), ("loss.backward()", True)])
def test_a_backward_of_an_object_of_unknown_kind_given_the_loss_is_not_read(backward, reported):
    # `model.backward(loss)`: a tensor's backward given a gradient, or an engine's backward of
    # `loss`? Which value is differentiated is unknown, so nothing is said of its scale.
    source = f"""
    def run(model, loader, opt, k):
        for i, batch in enumerate(loader):
            loss = model(batch)
            {backward}
            if (i + 1) % k == 0:
                opt.step()
                opt.zero_grad()

    def main(loader, opt):
        run(Net(), loader, opt, 4)
    """
    assert bool(_acc001(source)) is reported
