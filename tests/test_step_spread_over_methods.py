"""A training step spread over helpers: the scaled backward in one (`_run_batch`), the clip and
the GradScaler step in another (`_optimizer_step`), both called from the epoch loop (ACC004); the
loss handed to a meter the trainer keeps on itself (`self.losses.update(loss)`), in a method with
no loop of its own or in the loop, the meter's class in this module or another (ACC002). Each in
script, trainer-class and multi-module form, with clean twins."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint import engine
from tests.snippets import findings_of
from snippets import findings, row

# --- ACC004: backward and clip in two helpers -----------------------------------------------------

HELPERS = """
def run_batch(model, batch, scaler, k):
    with torch.autocast("cuda"):
        loss = model(batch).mean() / k
    {backward}
    return loss


def optimizer_step(model, optimizer, scaler):
    {unscale}
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
"""
SCRIPT_LOOP = """
def train(model, loader, optimizer, scaler, k):
    for i, batch in enumerate(loader):
        run_batch(model, batch, scaler, k)
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer_step(model, optimizer, scaler)
"""
TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, scaler, k):
        self.model = model
        self.optimizer = optimizer
        self.scaler = scaler
        self.k = k

    def _run_batch(self, batch):
        with torch.autocast("cuda"):
            loss = self.model(batch).mean() / self.k
        {backward}
        return loss

    def _optimizer_step(self):
        {unscale}
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad()

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            self._run_batch(batch)
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self._optimizer_step()
"""
SCALED = {"script": "scaler.scale(loss).backward()", "trainer": "self.scaler.scale(loss).backward()"}
UNSCALE = {"script": "scaler.unscale_(optimizer)", "trainer": "self.scaler.unscale_(self.optimizer)"}


def _step_source(form: str, unscale: bool = False, scaled: bool = True) -> str:
    text = "import torch\n\n" + textwrap.dedent(HELPERS + SCRIPT_LOOP if form == "script" else TRAINER)
    backward = SCALED[form] if scaled else "loss.backward()"
    return text.replace("{backward}", backward).replace("{unscale}", UNSCALE[form] if unscale else "pass")


def _codes(source: str, code: str, path: str = "t.py") -> list[int]:
    return [line for found, line in findings(source, path) if found == code]


@pytest.mark.parametrize("form", ["script", "trainer"])
def test_clip_in_one_helper_after_a_scaled_backward_in_another(form):
    source = _step_source(form)
    assert _codes(source, "ACC004") == [row(source, "clip_grad_norm_")]


@pytest.mark.parametrize("form", ["script", "trainer"])
def test_the_clipping_helper_that_unscales_first_is_clean(form):
    assert _codes(_step_source(form, unscale=True), "ACC004") == []


@pytest.mark.parametrize("form", ["script", "trainer"])
def test_a_helper_whose_backward_is_not_scaled_is_clean(form):
    assert _codes(_step_source(form, scaled=False), "ACC004") == []


def test_a_helper_that_unscales_after_its_backward_is_clean():
    source = _step_source("trainer").replace(
        "self.scaler.scale(loss).backward()",
        "self.scaler.scale(loss).backward()\n        self.scaler.unscale_(self.optimizer)")
    assert _codes(source, "ACC004") == []


def _project(root: Path, files: dict[str, str]) -> None:
    (root / ".git").mkdir()
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def _checked(path: Path, code: str) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in findings_of(path.read_bytes(), path=str(path), select=(code,))]


def test_both_helpers_in_another_module(tmp_path):
    helpers = "import torch\n\n" + textwrap.dedent(HELPERS).replace("{backward}", SCALED["script"]).replace("{unscale}", "pass")
    _project(tmp_path, {
        "steps.py": helpers,
        "train.py": "from steps import optimizer_step, run_batch\n" + textwrap.dedent(SCRIPT_LOOP),
    })
    found = _checked(tmp_path / "train.py", "ACC004")
    assert found == [("ACC004", row((tmp_path / "train.py").read_text(), "optimizer_step(model, optimizer, scaler)", last=True))]
    (tmp_path / "steps.py").write_text(helpers.replace("    pass\n", "    scaler.unscale_(optimizer)\n"))
    assert _checked(tmp_path / "train.py", "ACC004") == []


# --- ACC002: a meter kept on the trainer ----------------------------------------------------------

METER = """
class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
"""
METHOD_TRAINER = """
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.losses = AverageMeter()

    def train_step(self, batch):
        {reset}
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.losses.update({value}, batch.size(0))
        return loss

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
"""
LOOP_TRAINER = """
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.losses = AverageMeter()

    def fit(self, loader):
        for batch in loader:
            loss = self.model(batch).mean()
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            self.losses.update({value})
"""


def _meter_source(template: str, value: str = "loss", reset: str = "pass") -> str:
    return textwrap.dedent(METER) + textwrap.dedent(template).replace("{value}", value).replace("{reset}", reset)


@pytest.mark.parametrize("template", [METHOD_TRAINER, LOOP_TRAINER], ids=["step-method", "loop"])
def test_a_graph_carrying_loss_into_the_trainers_own_meter(template):
    source = _meter_source(template)
    assert _codes(source, "ACC002") == [row(source, "self.losses.update(")]


@pytest.mark.parametrize("template", [METHOD_TRAINER, LOOP_TRAINER], ids=["step-method", "loop"])
def test_a_number_into_the_trainers_own_meter_is_clean(template):
    assert _codes(_meter_source(template, value="loss.item()"), "ACC002") == []


def test_a_meter_made_anew_on_every_call_is_clean():
    assert _codes(_meter_source(METHOD_TRAINER, reset="self.losses = AverageMeter()"), "ACC002") == []


def test_the_step_method_fix_detaches_the_argument_once():
    fixed = engine.fix_source(_meter_source(METHOD_TRAINER), "t.py", select=("ACC002",)).fixed_source
    assert fixed is not None and "self.losses.update(loss.detach(), batch.size(0))" in fixed
    assert engine.fix_source(fixed, "t.py", select=("ACC002",)).fixed_source is None  # idempotent


@pytest.mark.parametrize("template", [METHOD_TRAINER, LOOP_TRAINER], ids=["step-method", "loop"])
def test_the_meter_class_in_another_module(tmp_path, template):
    _project(tmp_path, {
        "utils/__init__.py": "",
        "utils/meters.py": METER,
        "train.py": "from utils.meters import AverageMeter\n" + textwrap.dedent(template).replace("{value}", "loss").replace("{reset}", "pass"),
    })
    train = tmp_path / "train.py"
    assert _checked(train, "ACC002") == [("ACC002", row(train.read_text(), "self.losses.update("))]


FIELD_METER = """
class Statistics:
    def __init__(self):
        self.loss = 0.0

    def update(self, stat):
        self.loss += stat.loss{read}


def train(model, loader, optimizer, loss_compute):
    total_stats = Statistics()
    for batch in loader:
        loss, batch_stats = loss_compute(batch, model(batch))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_stats.update(batch_stats)
"""


def test_a_meter_that_keeps_a_field_of_an_unknown_object_is_silent():
    # `stat.loss` is whatever the statistics object holds (a float, in practice): not shown a tensor
    assert _codes(FIELD_METER.replace("{read}", ""), "ACC002") == []


def test_a_meter_that_keeps_a_method_result_of_its_argument_is_still_read():
    source = FIELD_METER.replace("stat.loss{read}", "stat.float()").replace(
        "total_stats.update(batch_stats)", "total_stats.update(loss)")
    assert _codes(source, "ACC002") == [row(source, "total_stats.update(loss)")]
