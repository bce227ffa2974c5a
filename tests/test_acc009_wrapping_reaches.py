"""ACC009 and the ways a DDP wrapping reaches the name the loop runs: `model = DDP(model)` then
`self.model = model` in a trainer's `__init__`; a project helper that returns the wrapped model
as an element of a tuple (`model, optimizer = setup_for_distributed_mode(...)`, in another module).
Clean twins: the attribute stored before the wrapping, a helper that returns the bare model, and
a module or method that asserts the accumulation count is 1 (`if args.distributed: assert args.accum
== 1`, `assert 1 == self.args.accum`), so a DDP run never accumulates; `assert 1 <= k` does not.
Forms: a script and a trainer class."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer, args):
        {init}
        self.optimizer = optimizer
        self.args = args

    def train_epoch(self, loader):
        for i, (x, y) in enumerate(loader):
            loss = self.model(x, y) / self.args.accum
            loss.backward()
            if (i + 1) % self.args.accum == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

WRAP_THEN_STORE = "if args.local_rank != -1:\n            model = DDP(model, device_ids=[args.local_rank])\n        self.model = model"
STORE_THEN_WRAP = "self.model = model\n        if args.local_rank != -1:\n            model = DDP(model, device_ids=[args.local_rank])"

SCRIPT = """
import torch


def main(model, optimizer, loader, args):
    {assertion}
    model = torch.nn.parallel.DistributedDataParallel(model)
    for batch_idx, steps in enumerate(loader):
        for x, y in steps:
            loss = model(x, y) / args.accumsteps
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


def acc009(source: str, path: str = "case.py") -> list:
    return findings_of(source, "ACC009", path=path, dedent=True)


def test_a_wrapped_local_stored_on_self_is_the_ddp_model():
    [finding] = acc009(TRAINER.format(init=WRAP_THEN_STORE))
    assert "`self.model.no_sync()`" in finding.message


def test_an_attribute_stored_before_the_wrapping_is_the_bare_model():
    assert acc009(TRAINER.format(init=STORE_THEN_WRAP)) == []


def test_an_accumulation_count_asserted_to_be_one_never_accumulates():
    assert acc009(SCRIPT.format(assertion="pass"))  # the twin: reported
    pinned = "if args.distributed:\n        assert args.accumsteps == 1"
    assert acc009(SCRIPT.format(assertion=pinned)) == []


@pytest.mark.parametrize("assertion,reported", [
    ("assert 1 == args.accumsteps", False),
    ("assert args.accumsteps < 2", False),
    ("assert 1 >= args.accumsteps", False),
    ("assert 1 <= args.accumsteps", True),  # rules out 0 only
    ("assert args.accumsteps >= 1", True),
    ("assert 0 < args.accumsteps", True),
])
def test_only_an_assertion_that_makes_the_count_one_silences(assertion: str, reported: bool):
    assert len(acc009(SCRIPT.format(assertion=assertion))) == int(reported)


@pytest.mark.parametrize("assertion,reported", [("assert 1 == self.args.accum", False), ("assert 1 <= self.args.accum", True)])
def test_a_method_assertion_either_way_round(assertion: str, reported: bool):
    source = TRAINER.format(init=WRAP_THEN_STORE).replace(
        "def train_epoch(self, loader):\n", f"def train_epoch(self, loader):\n        {assertion}\n"
    )
    assert assertion in source
    assert len(acc009(source)) == int(reported)


def test_another_number_asserted_to_be_one_does_not_silence():
    source = SCRIPT.format(assertion="assert args.batch_size == 1").replace("model(x, y)", "model(x, y, args.batch_size)")
    assert len(acc009(source)) == 1


HELPERS = """
import torch


def setup_for_distributed_mode(model, optimizer, local_rank):
    if local_rank != -1:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    return {returned}, optimizer
"""

RUNNER = """
from helpers import setup_for_distributed_mode


class Runner:
    def __init__(self, model, optimizer, args):
        model, optimizer = setup_for_distributed_mode(model, optimizer, args.local_rank)
        self.encoder = model
        self.optimizer = optimizer
        self.args = args

    def run_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.encoder(batch).mean() / self.args.accum
            loss.backward()
            if (i + 1) % self.args.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _runner_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, returned: str) -> list:
    (tmp_path / ".git").mkdir()
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPERS.format(returned=returned)))
    (tmp_path / "runner.py").write_text(textwrap.dedent(RUNNER))
    monkeypatch.chdir(tmp_path)
    return acc009((tmp_path / "runner.py").read_text(), "runner.py")


def test_a_helper_returning_the_wrapped_model_in_a_tuple(tmp_path, monkeypatch):
    [finding] = _runner_findings(tmp_path, monkeypatch, "model")
    assert "`self.encoder.no_sync()`" in finding.message


def test_a_helper_returning_the_bare_model_in_a_tuple(tmp_path, monkeypatch):
    assert _runner_findings(tmp_path, monkeypatch, "model.module if local_rank != -1 else model") == []


def test_an_assertion_inside_the_loop_guards_only_its_branch():
    """`if zero_order: assert args.accumsteps == 1 ...` inside the loop: the other branch accumulates."""
    source = SCRIPT.format(assertion="pass").replace(
        "        for x, y in steps:\n",
        "        if args.zero_order:\n            assert args.accumsteps == 1\n            continue\n        for x, y in steps:\n",
    )
    assert "assert args.accumsteps == 1" in source
    assert len(acc009(source)) == 1


AMP_OR_PLAIN = """
import torch


def run_train(model, loader, optimizer, scaler, args):
    for itr, batch in enumerate(loader):
        loss = model(batch).mean() / args.accum
        if args.amp:
            scaler.scale(loss).backward()
            if (itr + 1) % args.accum == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        else:
            loss.backward()
            if (itr + 1) % args.accum == 0:
                optimizer.step()
                optimizer.zero_grad()


def main(model, loader, optimizer, args):
    model = torch.nn.parallel.DistributedDataParallel(model)
    run_train(model, loader, optimizer, torch.cuda.amp.GradScaler(), args)
"""


def test_the_amp_and_plain_paths_of_one_loop_are_one_finding():
    assert len(acc009(AMP_OR_PLAIN)) == 1


PASSES = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def shard(self, device):
        self.model = DDP(self.model, device_ids=[device])

    def compute_loss(self, batch):
        return self.model(batch).mean()

    def fit(self, windows):
        for micro_batches in windows:
            for i, micro_batch in enumerate(micro_batches):
                if self.cp_size > 1:
                    loss = self.parallel_loss(self.model, micro_batch)
                else:
                    loss = self.compute_loss(micro_batch)
                loss = loss / len(micro_batches)
                if self._deepspeed_engine is not None:
                    self._deepspeed_engine.backward(loss)
                else:
                    loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def test_outputs_bound_on_one_branch_still_reach_backward():
    """`loss` from the model on one branch, from a method on the other, then scaled and
    backpropagated: not a graph-free teacher. Reported at the plain backward, not the DeepSpeed
    engine's."""
    [finding] = acc009(PASSES)
    assert finding.location.row == PASSES.splitlines().index("                    loss.backward()") + 1
