"""ACC009 where the window is a loop of micro-batches whose count is not written anywhere
(`for batch in batch_steps:` over the list a reader hands out): every pass runs backward, the
step runs once after the loop, and the DDP model all-reduces on every pass. Script,
trainer-class and multi-module (the step in a helper of another module) forms; clean twins:
`no_sync()` on the non-final passes, a step on every pass, the bare model."""

from __future__ import annotations

import textwrap
from pathlib import Path

from snippets import findings, row

from tests.snippets import findings_of

SCRIPT = """
import contextlib

import torch
from torch.nn.parallel import DistributedDataParallel


def train(model, reader, optimizer, config):
    {wrap}
    for batch_idx, batch_steps in zip(range(config.maxsteps), reader):
        for i, (x, y) in enumerate(batch_steps):
            {forward}
        {step}
        optimizer.zero_grad()
"""
WRAP = "model = DistributedDataParallel(model, device_ids=[config.rank])"
PLAIN = "loss = torch.nn.functional.cross_entropy(model(x), y) / config.accumsteps\n            loss.backward()"
NO_SYNC = (
    "last = i + 1 == len(batch_steps)\n"
    "            with contextlib.nullcontext() if last else model.no_sync():\n"
    "                loss = torch.nn.functional.cross_entropy(model(x), y) / config.accumsteps\n"
    "                loss.backward()"
)


def _script(wrap: str = WRAP, forward: str = PLAIN, step: str = "optimizer.step()") -> str:
    return textwrap.dedent(SCRIPT).replace("{wrap}", wrap).replace("{forward}", forward).replace("{step}", step)


def _acc009(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC009"]


def test_every_pass_of_a_loop_of_micro_batches_all_reduces():
    source = _script()
    assert _acc009(source) == [row(source, "loss.backward()")]


def test_no_sync_on_the_non_final_passes_is_clean():
    assert _acc009(_script(forward=NO_SYNC)) == []


def test_a_step_on_every_pass_is_no_window():
    assert _acc009(_script(forward=PLAIN + "\n            optimizer.step()", step="pass")) == []


def test_the_bare_model_is_clean():
    assert _acc009(_script(wrap="pass")) == []


TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, rank):
        self.model = DistributedDataParallel(model, device_ids=[rank])
        self.optimizer = optimizer

    def train_step(self, micro_batches):
        for x, y in micro_batches:
            loss = torch.nn.functional.cross_entropy(self.model(x), y) / len(micro_batches)
            loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
"""


def test_a_trainer_step_that_runs_a_whole_window():
    source = textwrap.dedent(TRAINER)
    assert _acc009(source) == [row(source, "loss.backward()")]


def test_the_step_in_a_helper_of_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "amp_utils.py").write_text(textwrap.dedent("""
        def optimizer_step(model, optimizer):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            optimizer.step()
            optimizer.zero_grad()
    """).lstrip())
    train = tmp_path / "train.py"
    train.write_text("from amp_utils import optimizer_step\n" + _script(step="optimizer_step(model, optimizer)"))
    found = findings_of(train.read_bytes(), path=str(train), select=("ACC009",))
    assert [f.location.row for f in found] == [row(train.read_text(), "loss.backward()")]


SECOND_PASS = (
    "for x, y in batch_steps:\n"
    "            loss = torch.nn.functional.cross_entropy(model(x.flip(0)), y) / config.accumsteps\n"
    "            loss.backward()\n"
    "        "
)


def test_two_loops_of_passes_before_one_step_are_one_window():
    """The passes of both loops add into one update: one finding, on the first loop (its fix
    covers the window); a step after each loop makes two windows, each reported."""
    source = _script(step=SECOND_PASS + "optimizer.step()")
    assert _acc009(source) == [row(source, "loss.backward()")]
    each = _script(step="optimizer.step()\n        optimizer.zero_grad()\n        " + SECOND_PASS + "optimizer.step()")
    assert _acc009(each) == [row(each, "loss.backward()"), row(each, "loss.backward()", last=True)]


def test_a_trainer_with_a_second_loop_before_the_step():
    source = textwrap.dedent(TRAINER).replace(
        "        self.optimizer.step()\n",
        "        for x, y in micro_batches:\n"
        "            self.model(x).sum().backward()\n"
        "        self.optimizer.step()\n",
    )
    assert _acc009(source) == [row(source, "loss.backward()")]
