"""ACC009 and a model that `accelerator.prepare()` or `fabric.setup()` returned where the code builds
the Accelerator or Fabric for DDP (`DistributedDataParallelKwargs`, `strategy="ddp"`): it is a
DistributedDataParallel model, and a loop that accumulates by hand with it (no
`accelerator.accumulate`, no `no_sync`) all-reduces on every micro-step. Silent where the launch
config alone decides (a bare `Accelerator()`: one process, DeepSpeed or FSDP are as likely), where
the framework controls sync (`accumulate(model)`, `no_sync`, `no_backward_sync`), where DeepSpeed
runs the engine, where the optimizer steps on every batch, and for prepared optimizers and loaders.
Script, trainer-class and multi-module forms."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch
from accelerate import Accelerator, DistributedDataParallelKwargs


def main(model, optimizer, loader, k):
    accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        {context}
            loss = model(**batch).loss / k
            accelerator.backward(loss)
        if (step + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs


class Trainer:
    def __init__(self, model, dataset, k):
        ddp_kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)
        self.accelerator = Accelerator(kwargs_handlers=[ddp_kwargs])
        self.optim = torch.optim.Adam(model.parameters())
        self.model, self.optim, self.dl = self.accelerator.prepare(model, self.optim, dataset)
        self.dl_iter = iter(self.dl)
        self.k = k

    def train_step(self):
        for i in range(self.k):
            {context}
                loss = self.model(next(self.dl_iter))
                self.accelerator.backward(loss / self.k)
        self.optim.step()
        self.optim.zero_grad()
"""

FABRIC = """
import torch
import lightning as L


def main(model, optimizer, loader, k):
    fabric = L.Fabric(devices=2, strategy="ddp")
    model, optimizer = fabric.setup(model, optimizer)
    for step, batch in enumerate(loader):
        {context}
            loss = model(batch) / k
            fabric.backward(loss)
        if (step + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

ALWAYS = "if True:"


def acc009(source: str) -> list:
    return findings_of(source, "ACC009", path="case.py", dedent=True)


@pytest.mark.parametrize("form, owner, model", [
    (SCRIPT, "accelerator", "model"), (TRAINER, "self.accelerator", "self.model"),
])
def test_a_prepared_model_accumulating_by_hand_reduces_every_micro_step(form, owner, model):
    [finding] = acc009(form.format(context=ALWAYS))
    assert f"the model that `{owner}` prepared" in finding.message
    assert f"`{owner}.no_sync({model})`" in finding.message


def test_a_fabric_model_accumulating_by_hand_reduces_every_micro_step():
    [finding] = acc009(FABRIC.format(context=ALWAYS))
    assert "`fabric.no_backward_sync(model, enabled=...)`" in finding.message


@pytest.mark.parametrize("form, context", [
    (SCRIPT, "with accelerator.accumulate(model):"),
    (SCRIPT, "with (accelerator.no_sync(model) if (step + 1) % k else contextlib.nullcontext()):"),
    (TRAINER, "with (self.accelerator.no_sync(self.model) if i < self.k - 1 else contextlib.nullcontext()):"),
    (FABRIC, "with fabric.no_backward_sync(model, enabled=(step + 1) % k != 0):"),
])
def test_sync_left_to_the_framework_is_silent(form, context):
    assert acc009("import contextlib\n" + form.format(context=context)) == []


@pytest.mark.parametrize("form", [SCRIPT, TRAINER])
def test_a_module_that_runs_deepspeed_is_silent(form):
    """DeepSpeed's engine reduces by its own accumulation settings, and has no `no_sync()`."""
    assert acc009("import deepspeed\n" + form.format(context=ALWAYS)) == []


@pytest.mark.parametrize("form, built, bare", [
    (SCRIPT, "Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])", "Accelerator()"),
    (TRAINER, "Accelerator(kwargs_handlers=[ddp_kwargs])", "Accelerator()"),
    (FABRIC, 'L.Fabric(devices=2, strategy="ddp")', 'L.Fabric(devices=2, strategy="deepspeed_stage_2")'),
])
def test_a_launch_the_code_leaves_to_its_config_is_silent(form, built, bare):
    source = form.format(context=ALWAYS)
    assert built in source
    source = source.replace(built, bare).replace("ddp_kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)", "pass")
    assert acc009(source) == []


def test_a_ddp_strategy_object_counts_as_a_ddp_launch():
    source = FABRIC.format(context=ALWAYS).replace('strategy="ddp"', "strategy=L.fabric.strategies.DDPStrategy()")
    assert len(acc009(source)) == 1


def test_stepping_every_batch_is_silent():
    source = SCRIPT.format(context=ALWAYS).replace("if (step + 1) % k == 0:", "if True:")
    assert acc009(source) == []


def test_a_prepared_optimizer_alone_is_silent():
    """Only the optimizer and loader went through prepare: the model is the bare one."""
    source = SCRIPT.format(context=ALWAYS).replace(
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)",
        "optimizer, loader = accelerator.prepare(optimizer, loader)",
    )
    assert acc009(source) == []


LOOP_MODULE = """
def train_one_epoch(model, optimizer, loader, accelerator, k):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / k
        accelerator.backward(loss)
        if (step + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

MAIN_MODULE = """
from accelerate import Accelerator, DistributedDataParallelKwargs
from engine import train_one_epoch


def main(model, optimizer, loader, k, epochs):
    accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs()])
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        train_one_epoch(model, optimizer, loader, accelerator, k)
"""


def _project(tmp_path: Path, monkeypatch, loop: str) -> list:
    (tmp_path / ".git").mkdir()
    (tmp_path / "engine.py").write_text(textwrap.dedent(loop))
    (tmp_path / "main.py").write_text(textwrap.dedent(MAIN_MODULE))
    monkeypatch.chdir(tmp_path)
    return findings_of((tmp_path / "main.py").read_text(), "ACC009", path="main.py")


def test_a_prepared_model_handed_to_a_loop_in_another_module(tmp_path, monkeypatch):
    [finding] = _project(tmp_path, monkeypatch, LOOP_MODULE)
    assert "the model `model` that `accelerator` prepared at line 8" in finding.message
    assert "engine.py" in finding.message


def test_a_prepared_model_handed_to_a_loop_under_accumulate_is_silent(tmp_path, monkeypatch):
    loop = LOOP_MODULE.replace(
        "        loss = model(**batch).loss / k\n        accelerator.backward(loss)\n",
        "        with accelerator.accumulate(model):\n"
        "            loss = model(**batch).loss / k\n            accelerator.backward(loss)\n",
    )
    assert "accumulate(model)" in loop
    assert _project(tmp_path, monkeypatch, loop) == []
