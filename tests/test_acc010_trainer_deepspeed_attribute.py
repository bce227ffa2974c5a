"""ACC010 through a trainer's `deepspeed` attribute: Hugging Face's Trainer keeps its DeepSpeed
engine in `self.deepspeed`, whose `backward` divides by the configured accumulation steps. A
subclass's `training_step` that divides by k whenever k > 1 and then calls
`self.deepspeed.backward(loss)` divides twice. The guarded form (`if k > 1 and not
self.deepspeed:`), also when the divided loss is summed with another before the backward, is right.
Forms: a Trainer subclass, a script driving a trainer object's engine, the subclass in a module
of its own."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


TRAINER = """
from transformers import Trainer


class CTCTrainer(Trainer):
    def training_step(self, model, inputs):
        model.train()
        outputs = model(**inputs)
        loss, rl_loss = outputs.loss, outputs.rl_loss
        if GUARD:
            loss = loss / self.args.gradient_accumulation_steps
            rl_loss = rl_loss / self.args.gradient_accumulation_steps
        total = loss + rl_loss
        if self.use_amp:
            self.scaler.scale(total).backward()
        elif self.deepspeed:
            self.deepspeed.backward(total)
        else:
            total.backward()
        return total.detach()
"""

SCRIPT = """
def train(runner, loader, args):
    for step, batch in enumerate(loader):
        loss = runner.deepspeed(batch).loss
        if GUARD:
            loss = loss / args.gradient_accumulation_steps
        runner.deepspeed.backward(loss)
        runner.deepspeed.step()
"""


def _rows(template: str, guard: str, filename: str = "train.py") -> list[int]:
    text = textwrap.dedent(template).replace("GUARD", guard)
    return [f.location.row for f in findings_of(text.encode(), path=filename, select=("ACC010",))]


def _row(template: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(template).splitlines(), 1) if needle in line)


def test_trainer_subclass_divides_before_the_engines_backward():
    assert _rows(TRAINER, "self.args.gradient_accumulation_steps > 1") == [_row(TRAINER, "self.deepspeed.backward(total)")]


def test_trainer_subclass_division_guarded_by_the_engine_is_right():
    assert _rows(TRAINER, "self.args.gradient_accumulation_steps > 1 and not self.deepspeed") == []


def test_script_with_a_trainers_engine_attribute():
    assert _rows(SCRIPT, "args.gradient_accumulation_steps > 1") == [_row(SCRIPT, "runner.deepspeed.backward(loss)")]
    assert _rows(SCRIPT, "not runner.deepspeed") == []


def test_trainer_subclass_in_its_own_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    trainer = tmp_path / "ctc_trainer.py"
    trainer.write_text(textwrap.dedent(TRAINER).replace("GUARD", "self.args.gradient_accumulation_steps > 1"))
    (tmp_path / "run.py").write_text("from ctc_trainer import CTCTrainer\n\n\ndef main(**kw):\n    CTCTrainer(**kw).train()\n")
    found = findings_of(trainer.read_bytes(), path=str(trainer), select=("ACC010",))
    assert [f.location.row for f in found] == [_row(TRAINER, "self.deepspeed.backward(total)")]


HF_LOOP = """
class MyTrainer(Trainer):
    def train(self, loader, args):
        for step, inputs in enumerate(loader):
            loss = self.training_step(self.model, inputs)
            if self.deepspeed:
                self.deepspeed.step()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                if self.deepspeed:
                    pass
                else:
                    self.optimizer.step()
                self.model.zero_grad()
"""


def test_engine_step_every_micro_step_keeps_the_plain_paths_window():
    # The engine applies once per its own window; the gated optimizer step of the plain path is
    # still a window, and its missing end-of-epoch clause is ACC005.
    text = "from transformers import Trainer\n" + textwrap.dedent(HF_LOOP)
    assert [f.location.row for f in findings_of(text.encode(), path="trainer.py", select=("ACC005",))] == [
        next(i for i, line in enumerate(text.splitlines(), 1) if "if (step + 1) %" in line)
    ]
