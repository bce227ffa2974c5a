"""ACC010 under DeepSpeed: the accumulation steps are whatever the code hands the engine under the
config key `gradient_accumulation_steps`, whatever that name is called (`args.update_freq`, the
fairseq word). A hand division by it before the engine's backward divides twice. Script and
trainer-class forms; the twins hand the engine a literal 1 or divide by something else."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
import deepspeed


def main(args, model, loader):
    ds_config = {
        "train_micro_batch_size_per_gpu": args.batch_size,
        "gradient_accumulation_steps": {configured},
    }
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)
    for batch in loader:
        loss = engine(batch).mean()
        loss /= {divisor}
        engine.backward(loss)
        engine.step()
"""

TRAINER = """
import deepspeed


class Trainer:
    def __init__(self, args, model):
        self.update_freq = args.update_freq
        config = dict(train_batch_size=args.batch_size, gradient_accumulation_steps={configured})
        self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, config=config)

    def train_step(self, batch):
        loss = self.engine(batch).mean() / {divisor}
        self.engine.backward(loss)
        self.engine.step()
"""


def _rows(template: str, configured: str, divisor: str) -> list[int]:
    text = textwrap.dedent(template.replace("{configured}", configured).replace("{divisor}", divisor)).lstrip("\n")
    return [f.location.row for f in findings_of(text, "ACC010", path="case.py")]


def test_the_configured_name_divided_by_hand_in_a_script():
    assert _rows(SCRIPT, "args.update_freq", "args.update_freq") == [13]


def test_the_configured_name_divided_by_hand_in_a_trainer():
    assert _rows(TRAINER, "self.update_freq", "self.update_freq") == [12]


def test_a_literal_one_in_the_config_leaves_the_hand_division_alone():
    assert _rows(SCRIPT, "1", "args.update_freq") == []


def test_dividing_by_something_else_is_no_second_division():
    assert _rows(SCRIPT, "args.update_freq", "args.tokens_per_batch") == []
