"""ACC010 under DeepSpeed where the hand division reads the accumulation steps straight from the
config dict handed to the engine, `loss / conf["gradient_accumulation_steps"]` (maybe only `if
conf["gradient_accumulation_steps"] > 1:`): the engine's backward divides again. The twins divide
by another entry of the same dict, or run a plain optimizer that does not divide.
Forms: a script, a trainer holding the config on `self`, and a config module imported by the script."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
import deepspeed


def main(args, model, loader):
    conf = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": args.gas}
    model_engine, optimizer, _, _ = deepspeed.initialize(config=conf, model=model)
    for step, batch in enumerate(loader):
        loss = model_engine(batch)[0]
        if conf["gradient_accumulation_steps"] > 1:
            loss = loss / conf[KEY]
        model_engine.backward(loss)
        model_engine.step()
"""

TRAINER = """
import deepspeed


class Trainer:
    def __init__(self, args, model):
        self.conf = dict(train_micro_batch_size_per_gpu=4, gradient_accumulation_steps=args.gas)
        self.engine, _, _, _ = deepspeed.initialize(config=self.conf, model=model)

    def train_step(self, batch):
        loss = self.engine(batch).mean() / self.conf[KEY]
        self.engine.backward(loss)
        self.engine.step()
"""

PLAIN = """
import torch


def main(conf, model, loader):
    optimizer = torch.optim.AdamW(model.parameters())
    for step, batch in enumerate(loader):
        loss = model(batch).mean() / conf[KEY]
        loss.backward()
        if (step + 1) % conf["gradient_accumulation_steps"] == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

ACCUMULATION = '"gradient_accumulation_steps"'
BATCH = '"train_micro_batch_size_per_gpu"'


def _acc010(source: str, key: str) -> int:
    text = textwrap.dedent(source).replace("KEY", key)
    return len(findings_of(text.encode(), path="train.py", select=("ACC010",)))


def test_script_divides_by_the_config_entry():
    assert _acc010(SCRIPT, ACCUMULATION) == 1
    assert _acc010(SCRIPT, BATCH) == 0


def test_trainer_divides_by_its_config_entry():
    assert _acc010(TRAINER, ACCUMULATION) == 1
    assert _acc010(TRAINER, BATCH) == 0


def test_plain_optimizer_divides_once():
    assert _acc010(PLAIN, ACCUMULATION) == 0


def test_config_from_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "settings.py").write_text('DS_CONFIG = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}\n')
    script = textwrap.dedent(SCRIPT).replace("    conf = {", "    unused = {").replace("import deepspeed\n", "import deepspeed\nfrom settings import DS_CONFIG as conf\n")
    path = tmp_path / "train.py"
    for key, expected in ((ACCUMULATION, 1), (BATCH, 0)):
        path.write_text(script.replace("KEY", key))
        assert len(findings_of(path.read_bytes(), path=str(path), select=("ACC010",))) == expected, key
