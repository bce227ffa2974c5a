"""ACC010 under Lightning Fabric with a DeepSpeed strategy: `DeepSpeedStrategy(config=...)` whose
config sets `gradient_accumulation_steps` runs a DeepSpeed engine whose backward divides the loss
by k, so `fabric.backward(loss / k)` divides twice. Also when the strategy is one branch of a
choice (`... if devices > 1 else "auto"`); no fix then, since on the other branch the hand
division is the only one. Twins: k of 1, no such key, another strategy, a config file, an
undivided loss."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine
from tests.snippets import findings_of

SCRIPT = """
import lightning as L
from lightning.fabric.strategies import DeepSpeedStrategy

devices = 4
micro_batch_size = 4
gradient_accumulation_iters = 64 // micro_batch_size

ds_config = {{
    "train_micro_batch_size_per_gpu": micro_batch_size,
    "gradient_accumulation_steps": {gas},
    "zero_optimization": {{"stage": 2}},
}}


def main():
    fabric = L.Fabric(devices=devices, strategy={strategy})
    fabric.launch()
    train(fabric, model, optimizer, loader)


def train(fabric, model, optimizer, loader):
    for iter_num, (x, y) in enumerate(loader):
        with fabric.no_backward_sync(model, enabled=(iter_num + 1) % gradient_accumulation_iters != 0):
            loss = loss_fn(model(x), y)
            fabric.backward({loss})
        if (iter_num + 1) % gradient_accumulation_iters == 0 or iter_num + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

DIVIDED = "loss / gradient_accumulation_iters"


def _acc010(source: str):
    return findings_of(textwrap.dedent(source).lstrip(), "ACC010", path="finetune.py")


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).lstrip().splitlines(), 1) if text in line)


@pytest.mark.parametrize("strategy", [
    "DeepSpeedStrategy(config=ds_config)",
    '(DeepSpeedStrategy(config=ds_config) if devices > 1 else "auto")',
    '"auto" if devices == 1 else DeepSpeedStrategy(config=ds_config, stage=2)',
])
def test_a_deepspeed_strategy_configured_to_accumulate_divides_again(strategy):
    source = SCRIPT.format(gas="gradient_accumulation_iters", strategy=strategy, loss=DIVIDED)
    found = _acc010(source)
    assert [f.location.row for f in found] == [_row(source, "fabric.backward(")]
    assert "DeepSpeedStrategy" in found[0].message and "keep one" in found[0].message
    assert found[0].fix is None  # on another strategy the hand division is the only one


def test_the_strategy_through_a_name():
    source = SCRIPT.format(gas="gradient_accumulation_iters", strategy="strategy", loss=DIVIDED).replace(
        "    fabric = L.Fabric(", "    strategy = DeepSpeedStrategy(config=ds_config)\n    fabric = L.Fabric("
    )
    assert len(_acc010(source)) == 1


@pytest.mark.parametrize("gas, strategy, loss", [
    ("1", "DeepSpeedStrategy(config=ds_config)", DIVIDED),  # the engine does not accumulate
    ("gradient_accumulation_iters", '"ddp"', DIVIDED),  # no DeepSpeed engine
    ("gradient_accumulation_iters", 'DeepSpeedStrategy(config="ds_config.json")', DIVIDED),  # not in sight
    ("gradient_accumulation_iters", "DeepSpeedStrategy(config=ds_config)", "loss"),  # divided once, by the engine
])
def test_twins_that_divide_once(gas, strategy, loss):
    assert _acc010(SCRIPT.format(gas=gas, strategy=strategy, loss=loss)) == []


def test_a_config_without_the_key_divides_once():
    source = SCRIPT.format(gas="1", strategy="DeepSpeedStrategy(config=ds_config)", loss=DIVIDED).replace(
        '    "gradient_accumulation_steps": 1,\n', ""
    )
    assert "gradient_accumulation_steps" not in source.split("def main")[0]
    assert _acc010(source) == []


TRAINER = """
from lightning.fabric import Fabric
from lightning.fabric.strategies import DeepSpeedStrategy


class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self.fabric = Fabric(strategy=DeepSpeedStrategy(config={{"gradient_accumulation_steps": accum_steps}}))
        self.model, self.optimizer = self.fabric.setup(model, optimizer)
        self.accum_steps = accum_steps

    def fit(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = self.model(x, y)
            self.fabric.backward({loss})
            if (step + 1) % self.accum_steps == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_a_trainer_whose_fabric_runs_an_accumulating_deepspeed_engine():
    source = TRAINER.format(loss="loss / self.accum_steps")
    assert [f.location.row for f in _acc010(source)] == [_row(source, "self.fabric.backward(")]
    assert _acc010(TRAINER.format(loss="loss")) == []


def _acc001(source: str):
    result = engine.check_source(textwrap.dedent(source).lstrip(), "finetune.py")
    return [f.location.row for f in result.findings if f.code == "ACC001"]


def test_an_undivided_loss_is_right_when_the_accumulating_engine_always_runs():
    assert _acc001(TRAINER.format(loss="loss")) == []
    always = SCRIPT.format(gas="gradient_accumulation_iters", strategy="DeepSpeedStrategy(config=ds_config)", loss="loss")
    assert _acc001(always) == []


def test_an_undivided_loss_is_wrong_on_the_other_branch_of_a_choice():
    # With `"auto"` (one device) nothing divides: ACC001 as for any plain loop.
    chosen = SCRIPT.format(gas="gradient_accumulation_iters", strategy='DeepSpeedStrategy(config=ds_config) if devices > 1 else "auto"', loss="loss")
    assert _acc001(chosen) == [_row(chosen, "fabric.backward(")]
    plain = SCRIPT.format(gas="gradient_accumulation_iters", strategy='"ddp"', loss="loss")
    assert _acc001(plain) == [_row(plain, "fabric.backward(")]
