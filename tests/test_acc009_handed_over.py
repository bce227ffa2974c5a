"""ACC009 where the model is wrapped in one function and accumulated with in another: wrapped in
`main()` and handed to `train_one_epoch(model, ...)` (this module or another), handed to a
method of the trainer, or to a project class whose `__init__` keeps it (`self.model = model`)
and whose method runs the loop. Also a backward that runs inside a helper called every
micro-step (a loss scaler's `__call__`). Each with twins that stay clean: the bare model
handed over, a loop that does not accumulate, a function that only evaluates, sync controlled
in the loop's module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

LOOP = """
def train_one_epoch(model, loader, optimizer, accum_steps, ema=None):
    for step, (x, y) in enumerate(loader):
        {forward}
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

EVERY_STEP = """
def train_one_epoch(model, loader, optimizer, accum_steps, ema=None):
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""

EVALUATE = """
def train_one_epoch(model, loader, optimizer, accum_steps, ema=None):
    total = 0.0
    for step, (x, y) in enumerate(loader):
        total += criterion(model(x), y).item()
    return total
"""

NO_SYNC = """
import contextlib

def train_one_epoch(model, loader, optimizer, accum_steps, ema=None):
    for step, (x, y) in enumerate(loader):
        last = (step + 1) % accum_steps == 0 or step + 1 == len(loader)
        with contextlib.nullcontext() if last else model.no_sync():
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()
"""

MAIN = """
def main(args):
    model = build_model(args)
    model_without_ddp = model
    if args.distributed:
        model = DDP(model, device_ids=[args.gpu])
        model_without_ddp = model.module
    optimizer = torch.optim.AdamW(model_without_ddp.parameters())
    for epoch in range(args.epochs):
        {call}
"""

HEADER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
"""

CALL = "train_one_epoch(model, loader, optimizer, args.accum_steps)"


def _findings(source: str, path: str = "train.py") -> list[tuple[str, int, str]]:
    return sorted((f.code, f.location.row, f.message) for f in findings_of(textwrap.dedent(source).lstrip(), path=path))


def _acc009(source: str, path: str = "train.py") -> list[tuple[int, str]]:
    return [(row, message) for code, row, message in _findings(source, path) if code == "ACC009"]


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if text in line)


def _script(loop: str = LOOP, call: str = CALL, forward: str = "pass") -> str:
    return HEADER + loop.format(forward=forward) + MAIN.format(call=call)


# --- script form: the same module ----------------------------------------------------------------

@pytest.mark.parametrize("call", [
    CALL,
    "train_one_epoch(model=model, loader=loader, optimizer=optimizer, accum_steps=args.accum_steps)",
    "train_one_epoch(ema=None, accum_steps=4, optimizer=optimizer, loader=loader, model=model)",
])
def test_a_wrapped_model_handed_to_an_accumulating_loop_is_reported_at_its_backward(call):
    source = _script(call=call)
    found = _acc009(source)
    assert [row for row, _ in found] == [_row(source, "loss.backward()")]
    message = found[0][1]
    assert "`model` (wrapped at line" in message and "handed to `train_one_epoch()`" in message
    assert "`model.no_sync()`" in message


@pytest.mark.parametrize("loop", [EVERY_STEP, EVALUATE, NO_SYNC])
def test_a_loop_that_does_not_accumulate_or_controls_sync_is_clean(loop):
    assert _acc009(_script(loop=loop)) == []


def test_the_bare_model_handed_over_is_clean():
    source = _script(call="train_one_epoch(model_without_ddp, loader, optimizer, args.accum_steps)")
    assert _acc009(source) == []


def test_the_wrapped_model_in_a_parameter_the_loop_does_not_run_is_clean():
    source = _script(call="train_one_epoch(model_without_ddp, loader, optimizer, args.accum_steps, ema=model)")
    assert _acc009(source) == []


def test_a_model_wrapped_in_another_function_of_the_same_name_is_not_this_callers():
    # `model` is wrapped in `setup()`, but `main()` hands over its own, bare `model`.
    source = HEADER + LOOP.format(forward="pass") + """
def setup(model):
    model = DDP(model)
    return model

def main(args):
    model = build_model(args)
    optimizer = torch.optim.AdamW(model.parameters())
    train_one_epoch(model, loader, optimizer, args.accum_steps)
"""
    assert _acc009(source) == []


def test_a_backward_inside_a_helper_called_every_micro_step_is_reported():
    # The ConvNeXt/DeiT shape: `loss_scaler(loss, optimizer, update_grad=...)` runs the backward.
    source = HEADER + """
class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, update_grad=True):
        self._scaler.scale(loss).backward()
        if update_grad:
            self._scaler.step(optimizer)
            self._scaler.update()

def train_one_epoch(model, loader, optimizer, loss_scaler, update_freq):
    optimizer.zero_grad()
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / update_freq
        loss_scaler(loss, optimizer, update_grad=(step + 1) % update_freq == 0)
        if (step + 1) % update_freq == 0:
            optimizer.zero_grad()

def main(args):
    model = DDP(build_model(args), device_ids=[args.gpu])
    optimizer = torch.optim.AdamW(model.parameters())
    loss_scaler = NativeScaler()
    train_one_epoch(model, loader, optimizer, loss_scaler, args.update_freq)
"""
    found = _acc009(source)
    assert [row for row, _ in found] == [_row(source, "loss_scaler(loss, optimizer, update_grad")]


def test_a_helper_backward_in_the_wrapping_function_itself_is_reported():
    source = HEADER + """
def scaled_backward(loss, scaler):
    scaler.scale(loss).backward()

def train(model, loader, optimizer, scaler, k):
    model = DDP(model)
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / k
        scaled_backward(loss, scaler)
        if (step + 1) % k == 0 or step + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""
    assert [row for row, _ in _acc009(source)] == [_row(source, "    scaled_backward(loss, scaler)")]


# --- trainer-class form ---------------------------------------------------------------------------

TRAINER_METHOD = HEADER + """
class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self.model, self.optimizer, self.accum_steps = model, optimizer, accum_steps

    def fit(self, loader, epochs):
        model = {wrapped}
        for epoch in range(epochs):
            self._run_epoch(model, loader)

    def _run_epoch(self, model, loader):
        for step, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / self.accum_steps
            loss.backward()
            if (step + 1) % self.accum_steps == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_a_trainer_method_handed_the_wrapped_model_is_reported():
    source = TRAINER_METHOD.format(wrapped="DDP(self.model, device_ids=[0])")
    found = _acc009(source)
    assert [row for row, _ in found] == [_row(source, "loss.backward()")]
    assert "handed to `_run_epoch()`" in found[0][1]


def test_a_trainer_method_handed_the_bare_model_is_clean():
    assert _acc009(TRAINER_METHOD.format(wrapped="self.model")) == []


TRAINER_CLASS = """
class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self.model = model
        self.optimizer = optimizer
        self.accum_steps = accum_steps

    def train_epoch(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = criterion(self.model(x), y) / self.accum_steps
            loss.backward()
            if (step + 1) % self.accum_steps == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

BUILD_TRAINER = """
def main(args):
    model = build_model(args)
    ddp_model = DDP(model, device_ids=[args.gpu])
    optimizer = torch.optim.AdamW(model.parameters())
    trainer = Trainer({model}, optimizer, args.accum_steps)
    trainer.train_epoch(loader)
"""


def test_a_project_class_built_with_the_wrapped_model_is_reported():
    source = HEADER + TRAINER_CLASS + BUILD_TRAINER.format(model="ddp_model")
    found = _acc009(source)
    assert [row for row, _ in found] == [_row(source, "loss.backward()")]
    assert "`ddp_model`" in found[0][1] and "handed to `train_epoch()`" in found[0][1]


def test_a_project_class_built_with_the_bare_model_is_clean():
    assert _acc009(HEADER + TRAINER_CLASS + BUILD_TRAINER.format(model="model")) == []


# --- multi-module form ----------------------------------------------------------------------------

def _project(tmp_path: Path, monkeypatch, files: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    monkeypatch.chdir(tmp_path)


def _check(tmp_path: Path, name: str) -> list[tuple[int, str]]:
    return _acc009((tmp_path / name).read_text(), name)


MAIN_MODULE = HEADER + """
from engine import train_one_epoch


def main(args):
    model = build_model(args)
    if args.distributed:
        model = DDP(model, device_ids=[args.gpu])
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in range(args.epochs):
        {call}
"""


def test_a_loop_in_another_module_is_reported_at_the_call_that_hands_the_model(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {"engine.py": "import torch\n" + LOOP.format(forward="pass"), "main.py": MAIN_MODULE.format(call=CALL)})
    found = _check(tmp_path, "main.py")
    assert [row for row, _ in found] == [_row(MAIN_MODULE.format(call=CALL), CALL)]
    backward_row = _row((tmp_path / "engine.py").read_text(), "loss.backward()")
    assert f"(engine.py:{backward_row})" in found[0][1] and "there in `model.no_sync()`" in found[0][1]
    # The loop's own module shows no wrapping: checked alone, it is clean.
    assert _check(tmp_path, "engine.py") == []


@pytest.mark.parametrize("loop", [EVERY_STEP, EVALUATE, NO_SYNC])
def test_a_loop_in_another_module_that_does_not_accumulate_or_controls_sync_is_clean(tmp_path, monkeypatch, loop):
    _project(tmp_path, monkeypatch, {"engine.py": "import torch\n" + loop.format(forward="pass"), "main.py": MAIN_MODULE.format(call=CALL)})
    assert _check(tmp_path, "main.py") == []


def test_a_trainer_class_in_another_module_built_with_the_wrapped_model(tmp_path, monkeypatch):
    main = HEADER + "from trainer import Trainer\n" + BUILD_TRAINER
    _project(tmp_path, monkeypatch, {"trainer.py": TRAINER_CLASS, "main.py": main.format(model="ddp_model")})
    found = _check(tmp_path, "main.py")
    assert [row for row, _ in found] == [_row(main, "trainer = Trainer(")]
    assert "handed to `train_epoch()` (trainer.py:" in found[0][1]
    (tmp_path / "main.py").write_text(textwrap.dedent(main.format(model="model")).lstrip())
    assert _check(tmp_path, "main.py") == []


def test_a_helper_in_another_module_that_controls_sync_keeps_the_loop_clean(tmp_path, monkeypatch):
    helper = """
import contextlib

def forward_backward(model, x, y, last):
    with contextlib.nullcontext() if last else model.no_sync():
        loss = criterion(model(x), y)
        loss.backward()
"""
    main = HEADER + """
from helpers import forward_backward


def train(model, loader, optimizer, k):
    model = DDP(model)
    for step, (x, y) in enumerate(loader):
        last = (step + 1) % k == 0 or step + 1 == len(loader)
        forward_backward(model, x, y, last)
        if last:
            optimizer.step()
            optimizer.zero_grad()
"""
    _project(tmp_path, monkeypatch, {"helpers.py": helper, "main.py": main})
    assert _check(tmp_path, "main.py") == []
    (tmp_path / "helpers.py").write_text(textwrap.dedent(helper.replace("model.no_sync()", "contextlib.nullcontext()")).lstrip())
    assert [row for row, _ in _check(tmp_path, "main.py")] == [_row(main, "forward_backward(model, x, y, last)")]


# --- the loop read as its caller runs it: a step object handed in ---------------------------------

SCALER_MODULE = """
import torch


class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, parameters=None, update_grad=True):
        self._scaler.scale(loss).backward()
        if update_grad:
            self._scaler.unscale_(optimizer)
            self._scaler.step(optimizer)
            self._scaler.update()
"""

ENGINE_WITH_SCALER = """
import torch


def train_one_epoch(model, loader, optimizer, loss_scaler, accum_iter):
    optimizer.zero_grad()
    for step, (x, y) in enumerate(loader):
        with torch.cuda.amp.autocast():
            loss = criterion(model(x), y)
        loss /= accum_iter
        loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=(step + 1) % accum_iter == 0)
        if (step + 1) % accum_iter == 0:
            optimizer.zero_grad()
"""

MAIN_WITH_SCALER = HEADER + """
from engine import train_one_epoch
from scaling import NativeScaler


def main(args):
    model = DDP(build_model(args), device_ids=[args.gpu])
    optimizer = torch.optim.AdamW(model.parameters())
    loss_scaler = {scaler}
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, loss_scaler, args.accum_iter)
"""


def test_a_step_object_the_caller_hands_in_makes_the_loop_a_window(tmp_path, monkeypatch):
    # The loop's own module cannot tell what `loss_scaler` is; the caller builds a NativeScaler,
    # whose call runs the backward and, under `update_grad`, the step.
    main = MAIN_WITH_SCALER.format(scaler="NativeScaler()")
    _project(tmp_path, monkeypatch, {"scaling.py": SCALER_MODULE, "engine.py": ENGINE_WITH_SCALER, "main.py": main})
    found = _check(tmp_path, "main.py")
    assert [row for row, _ in found] == [_row(main, "train_one_epoch(model, loader")]
    scaler_row = _row((tmp_path / "engine.py").read_text(), "loss_scaler(loss, optimizer")
    assert f"(engine.py:{scaler_row})" in found[0][1]


def test_the_callers_view_does_not_change_the_loops_own_reading(tmp_path, monkeypatch):
    main = MAIN_WITH_SCALER.format(scaler="NativeScaler()")
    _project(tmp_path, monkeypatch, {"scaling.py": SCALER_MODULE, "engine.py": ENGINE_WITH_SCALER, "main.py": main})
    alone = _findings((tmp_path / "engine.py").read_text(), "engine.py")
    assert _check(tmp_path, "main.py") != []
    assert _findings((tmp_path / "engine.py").read_text(), "engine.py") == alone


def test_a_step_object_that_is_no_project_class_leaves_the_loop_unread(tmp_path, monkeypatch):
    main = MAIN_WITH_SCALER.format(scaler="torch.cuda.amp.GradScaler()")
    _project(tmp_path, monkeypatch, {"scaling.py": SCALER_MODULE, "engine.py": ENGINE_WITH_SCALER, "main.py": main})
    assert _check(tmp_path, "main.py") == []


def test_a_step_object_whose_module_controls_sync_keeps_the_loop_clean(tmp_path, monkeypatch):
    scaler = SCALER_MODULE + """

def no_sync_context(model, last):
    return contextlib.nullcontext() if last else model.no_sync()
"""
    main = MAIN_WITH_SCALER.format(scaler="NativeScaler()")
    _project(tmp_path, monkeypatch, {"scaling.py": scaler, "engine.py": ENGINE_WITH_SCALER, "main.py": main})
    assert _check(tmp_path, "main.py") == []


# --- what counts as the wrapping, and as sync control ---------------------------------------------

YOLO_LOOP = HEADER + """
def train(model, loader, optimizer, scaler, batch_size, nbs=64):
    accumulate = max(round(nbs / batch_size), 1)
    model = {wrap}
    for i, (imgs, targets) in enumerate(loader):
        with torch.cuda.amp.autocast():
            loss = compute_loss(model(imgs), targets)
        scaler.scale(loss).backward()
        if (i + 1) % accumulate == 0 or i + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    {after}
"""


def test_a_step_count_named_accumulate_is_no_sync_control():
    source = YOLO_LOOP.format(wrap="DDP(model, device_ids=[0])", after="coco_eval.accumulate()")
    assert [row for row, _ in _acc009(source)] == [_row(source, "scaler.scale(loss).backward()")]


def test_accelerates_accumulate_context_still_is():
    source = YOLO_LOOP.format(wrap="DDP(model, device_ids=[0])", after="ctx = accelerator.accumulate(model)")
    assert _acc009(source) == []


WRAPPERS = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def smart_DDP(model):
    if torch.__version__ >= "1.11":
        return DDP(model, device_ids=[0], static_graph=True)
    return DDP(model, device_ids=[0])


def maybe_parallel(model):
    if torch.cuda.device_count() > 1:
        return torch.nn.DataParallel(model)
    return model
"""


@pytest.mark.parametrize("wrap, reported", [("smart_DDP(model)", True), ("maybe_parallel(model)", False)])
def test_a_project_function_that_returns_the_wrapping(tmp_path, monkeypatch, wrap, reported):
    main = YOLO_LOOP.format(wrap=wrap, after="pass").replace(HEADER, HEADER + "from wrappers import smart_DDP, maybe_parallel\n")
    _project(tmp_path, monkeypatch, {"wrappers.py": WRAPPERS, "main.py": main})
    expected = [_row(main, "scaler.scale(loss).backward()")] if reported else []
    assert [row for row, _ in _check(tmp_path, "main.py")] == expected


def test_a_project_function_that_returns_the_wrapping_in_a_trainer():
    source = WRAPPERS + """

class Trainer:
    def __init__(self, model, optimizer, k):
        self.model = smart_DDP(model)
        self.optimizer, self.k = optimizer, k

    def train_epoch(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = criterion(self.model(x), y) / self.k
            loss.backward()
            if (step + 1) % self.k == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""
    assert [row for row, _ in _acc009(source)] == [_row(source, "loss.backward()")]
    assert _acc009(source.replace("self.model = smart_DDP(model)", "self.model = maybe_parallel(model)")) == []


# --- handed on: the function handed the model passes it to the one that loops ----------------------

RUNNER = """
from engine import train_one_epoch


class Runner:
    def __init__(self, loader, optimizer, accum_steps):
        self.loader, self.optimizer, self.accum_steps = loader, optimizer, accum_steps

    def train(self, model, epochs):
        for epoch in range(epochs):
            self._train_epoch(epoch, model={onward})

    def _train_epoch(self, epoch, model):
        return train_one_epoch(model, self.loader, self.optimizer, self.accum_steps)
"""

MAIN_WITH_RUNNER = HEADER + """
from runner import Runner


def main(args):
    model = DDP(build_model(args), device_ids=[args.gpu])
    runner = Runner(loader, torch.optim.AdamW(model.parameters()), args.accum_steps)
    runner.train(model, args.epochs)
"""


def test_a_model_handed_on_through_a_runner_reaches_the_loop(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {
        "engine.py": "import torch\n" + LOOP.format(forward="pass"),
        "runner.py": RUNNER.format(onward="model"),
        "main.py": MAIN_WITH_RUNNER,
    })
    found = _check(tmp_path, "main.py")
    assert [row for row, _ in found] == [_row(MAIN_WITH_RUNNER, "runner.train(model")]
    assert "`train_one_epoch()` through `train()` (engine.py:" in found[0][1]


def test_a_runner_that_hands_on_the_bare_model_is_clean(tmp_path, monkeypatch):
    _project(tmp_path, monkeypatch, {
        "engine.py": "import torch\n" + LOOP.format(forward="pass"),
        "runner.py": RUNNER.format(onward="model.module"),
        "main.py": MAIN_WITH_RUNNER,
    })
    assert _check(tmp_path, "main.py") == []
