"""A function that runs backward and steps only under a setting test (`if self.env_type ==
"pytorchDDP": optimizer.step()`) does not gate its own window: comparing a setting with a string,
None or a boolean is no counter reaching a bound. It is no entry method (no implicit loop), so a
module that elsewhere sizes its schedule in windows gets no ACC012 on it. A counter compared with
its bound (`self.micro_step == self.accum_steps`) still makes an entry. Forms: a script function, a
trainer method, and the trainer in another module."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from accumlint.analysis.entries import gates_its_own_window
from tests.snippets import findings_of

SIZING = """
def build_scheduler(optimizer, args, loader):
    total = int(args.epochs * len(loader) / args.gradient_accumulation_steps)
    return Noam(optimizer, warmup_iter=int(0.1 * total), end_iter=total)
"""

SCRIPT = """
def backward_step(optimizer, model, loss, args):
    if args.env_type == "deepspeed":
        model.backward(loss)
    else:
        loss.backward()
        if TEST:
            optimizer.step()
    return loss
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, args):
        self.model = model
        self.optimizer = optimizer
        self.env_type = args.env_type
        self.micro_step = 0
        self.gradient_accumulation_steps = args.gradient_accumulation_steps

    def backward_step(self, loss):
        if "deepspeed" in self.env_type:
            self.model.backward(loss)
        else:
            loss.backward()
            if TEST:
                self.optimizer.step()
        return loss
"""

SETTINGS = ['args.env_type == "pytorchDDP"', "args.use_amp == True", "args.scaler == None"]


def _acc012(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC012", path=path)


def _function(source: str, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)


@pytest.mark.parametrize("test", SETTINGS)
def test_setting_test_makes_no_entry(test: str) -> None:
    source = textwrap.dedent(SCRIPT).replace("TEST", test)
    assert not gates_its_own_window(_function(source, "backward_step"))
    trainer = textwrap.dedent(TRAINER).replace("TEST", test.replace("args.", "self."))
    assert not gates_its_own_window(_function(trainer, "backward_step"))


@pytest.mark.parametrize("test", ["self.micro_step == self.gradient_accumulation_steps", "self.micro_step % self.gradient_accumulation_steps == 0"])
def test_counter_test_makes_an_entry(test: str) -> None:
    trainer = textwrap.dedent(TRAINER).replace("TEST", test)
    assert gates_its_own_window(_function(trainer, "backward_step"))


@pytest.mark.parametrize("test", SETTINGS)
def test_no_window_claimed_on_a_setting_gated_step(test: str) -> None:
    script = textwrap.dedent(SIZING) + textwrap.dedent(SCRIPT).replace("TEST", test)
    assert _acc012(script) == []
    trainer = textwrap.dedent(SIZING) + textwrap.dedent(TRAINER).replace("TEST", test.replace("args.", "self."))
    assert _acc012(trainer) == []


def test_trainer_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    trainer = textwrap.dedent(SIZING) + textwrap.dedent(TRAINER).replace("TEST", 'self.env_type == "pytorchDDP"')
    (tmp_path / "trainer.py").write_text(trainer)
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent("""
        from trainer import Trainer

        def run(model, optimizer, args, loss):
            Trainer(model, optimizer, args).backward_step(loss)
    """))
    for path in (tmp_path / "trainer.py", main):
        assert _acc012(path.read_text(), str(path)) == []
