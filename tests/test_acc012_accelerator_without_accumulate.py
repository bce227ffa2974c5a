"""ACC012: an `Accelerator` built with `gradient_accumulation_steps=k` divides every loss handed to
its `backward` by k, inside `accumulate()` or not; only `with accelerator.accumulate(model):` holds
the prepared optimizer's step for k micro-steps. A loop that never enters it steps on every
micro-step with a loss divided by k: updates k times too small (early DreamBooth LoRA scripts).
Twins: the loop inside `accumulate()`, an Accelerator with no accumulation steps, a DeepSpeed
plugin (the engine holds its own window). Script, trainer-class and multi-module forms."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

SCRIPT = """
from accelerate import Accelerator


def main(args, model, loader, optimizer, lr_scheduler):
    accelerator = Accelerator({options})
    model, optimizer, loader, lr_scheduler = accelerator.prepare(model, optimizer, loader, lr_scheduler)
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            {enter}
                loss = model(batch).mean()
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
"""

ACCUMULATING = "gradient_accumulation_steps=args.gradient_accumulation_steps"
PLAIN = "if True:"
ACCUMULATE = "with accelerator.accumulate(model):"

TRAINER = """
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, optimizer, loader, cfg):
        self.accelerator = Accelerator(gradient_accumulation_steps=cfg.grad_accum, mixed_precision="bf16")
        self.model, self.optimizer, self.loader = self.accelerator.prepare(model, optimizer, loader)

    def train_epoch(self):
        for batch in self.loader:
            {enter}
                loss = self.model(batch).mean()
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _script(options: str = ACCUMULATING, enter: str = PLAIN) -> str:
    return SCRIPT.format(options=options, enter=enter)


def test_a_loop_outside_accumulate_steps_every_micro_step_on_a_divided_loss():
    source = _script()
    [(code, line)] = findings(source)
    assert (code, line) == ("ACC012", row(source, "optimizer.step()"))


def test_the_message_names_the_division_and_the_context():
    from accumlint import engine

    result = engine.check_source(textwrap.dedent(_script()).lstrip(), "train.py")
    [finding] = result.findings
    assert "`accelerator.backward` divides each loss by its accumulation steps" in finding.message
    assert "`with accelerator.accumulate(model):`" in finding.message


def test_the_loop_inside_accumulate_is_clean():
    assert findings(_script(enter=ACCUMULATE)) == []


@pytest.mark.parametrize("options", ["", "mixed_precision='fp16'", "gradient_accumulation_steps=1"])
def test_an_accelerator_without_accumulation_steps_divides_nothing(options):
    assert findings(_script(options)) == []


@pytest.mark.parametrize("extra", ["deepspeed_plugin=plugin", "**kwargs"])
def test_a_deepspeed_plugin_or_unseen_options_stay_silent(extra):
    assert findings(_script(f"{ACCUMULATING}, {extra}")) == []


def test_a_trainer_stepping_outside_accumulate_is_reported():
    source = TRAINER.format(enter=PLAIN)
    assert findings(source) == [("ACC012", row(source, "self.optimizer.step()"))]


def test_a_trainer_stepping_inside_accumulate_is_clean():
    assert findings(TRAINER.format(enter="with self.accelerator.accumulate(self.model):")) == []


def test_the_loss_from_another_module(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text("def compute_loss(model, batch):\n    return model(batch).mean()\n")
    source = _script().replace("from accelerate import Accelerator\n", "from accelerate import Accelerator\nfrom losses import compute_loss\n")
    source = source.replace("loss = model(batch).mean()", "loss = compute_loss(model, batch)")
    (tmp_path / "train.py").write_text(textwrap.dedent(source).lstrip())
    monkeypatch.chdir(tmp_path)
    assert findings((tmp_path / "train.py").read_text(), "train.py") == [("ACC012", row(source, "optimizer.step()"))]
