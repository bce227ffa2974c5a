"""A `while` loop whose every pass runs backward, with the optimizer step once after it (random
restarts of a refinement: `while r < args.restart_prob: ... loss.backward()`), is a window of
passes like a `for` loop over micro-batches: a DDP model all-reduces on every pass (ACC009), and
zeroing on every pass leaves only the last pass's gradient for the step (ACC007). Not a loop that
runs until a pass gets through (`while True:` with a `break`, a `try` that retries after running
out of memory, or a test on a flag the pass sets after its backward): only the pass that succeeds
is meant to reach the step. Forms: a script and a
trainer class."""

from __future__ import annotations

import pytest

from accumlint.engine import check_source

SCRIPT = """
import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args, model, loader, optimizer):
    WRAP
    rng = np.random.default_rng()
    for batch in loader:
        optimizer.zero_grad()
        state = None
        PASSES
        optimizer.step()
"""

WRAPPED = "model = DDP(model, device_ids=[args.gpu])"
BARE = "model = model.cuda()"

RESTARTS = """r = 0
        while r < args.restart_prob:
            r = rng.random()
            ZERO
            out, state = model(batch, state)
            loss = out.mean()
            loss.backward()
            state = state.detach()"""

RETRY = """while True:
            ZERO
            loss = model(batch).mean()
            loss.backward()
            break"""

OOM_RETRY = """done = False
        while not done:
            try:
                ZERO
                loss = model(batch).mean()
                loss.backward()
                done = True
            except torch.cuda.OutOfMemoryError:
                batch = batch[: len(batch) // 2]"""

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, args, model, optimizer):
        self.model = DDP(model, device_ids=[args.gpu])
        self.optimizer = optimizer
        self.restarts = args.restarts

    def train(self, loader):
        for batch in loader:
            self.optimizer.zero_grad()
            n = 0
            while n < self.restarts:
                n += 1
                loss = self.model(batch).mean()
                loss.backward()
            self.optimizer.step()
"""


def _script(wrap: str = WRAPPED, passes: str = RESTARTS, zero: str = "pass") -> str:
    return SCRIPT.replace("WRAP", wrap).replace("PASSES", passes).replace("ZERO", zero)


def _codes(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in check_source(source.encode(), "train.py").findings]


def _row(source: str, text: str, nth: int = 0) -> int:
    return [i for i, line in enumerate(source.splitlines(), 1) if line.strip() == text][nth]


def test_ddp_reduces_on_every_restart() -> None:
    source = _script()
    [finding] = check_source(source.encode(), "train.py").findings
    assert (finding.code, finding.location.row) == ("ACC009", _row(source, "loss.backward()"))
    assert "every pass of this `while` loop" in finding.message


def test_a_trainer_repeating_passes_by_a_count() -> None:
    assert _codes(TRAINER) == [("ACC009", _row(TRAINER, "loss.backward()"))]


def test_zeroing_on_every_restart_keeps_only_the_last() -> None:
    source = _script(BARE, zero="optimizer.zero_grad()")
    assert _codes(source) == [("ACC007", _row(source, "optimizer.zero_grad()", 1))]


FLAG_RETRY = """ok = False
        attempts = 0
        while not ok and attempts < 3:
            attempts += 1
            ZERO
            loss = model(batch).mean()
            loss.backward()
            ok = bool(torch.isfinite(loss))"""


@pytest.mark.parametrize("passes", [RETRY, OOM_RETRY, FLAG_RETRY], ids=["until-break", "oom-retry", "until-finite"])
@pytest.mark.parametrize("zero", ["pass", "optimizer.zero_grad()"], ids=["no-zero", "zero-each-try"])
def test_a_loop_that_runs_until_a_pass_gets_through_is_clean(passes: str, zero: str) -> None:
    assert _codes(_script(passes=passes, zero=zero)) == []


def test_the_bare_model_is_clean() -> None:
    assert _codes(_script(BARE)) == []
