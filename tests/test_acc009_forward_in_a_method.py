"""A trainer's micro-step loop that calls another method of its class for the forward and
backward (`for _ in range(k): self.run_min_batch(batch)`, then the step) runs the DDP model on
`self` on every micro-step: ACC009. Twins: the method enters `self.model.no_sync()` for the
non-final micro-steps, or runs the model only under `torch.no_grad()` (a teacher): clean. Forms: the
trainer class with DDP built in `__init__`, the DDP model built by a helper in another module,
and a script whose micro-step function takes the model as an argument."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

TRAINER = """
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, student, optimizer, accum_iter):
        self.model = DDP(model)
        self.student = student
        self.optimizer = optimizer
        self.accum_iter = accum_iter

    def run_step(self, loader):
        for micro_step in range(self.accum_iter):
            self.run_min_batch(next(loader), micro_step)
        self.optimizer.step()
        self.optimizer.zero_grad()

    def run_min_batch(self, batch, micro_step):
        BODY
"""

PLAIN = """
        loss = self.model(batch).mean() / self.accum_iter
        loss.backward()
"""

NO_SYNC = """
        last = micro_step + 1 == self.accum_iter
        with contextlib.nullcontext() if last else self.model.no_sync():
            loss = self.model(batch).mean() / self.accum_iter
            loss.backward()
"""

TEACHER = """
        with torch.no_grad():
            target = self.model(batch)
        loss = (self.student(batch) - target).pow(2).mean() / self.accum_iter
        loss.backward()
"""

SCRIPT = """
from torch.nn.parallel import DistributedDataParallel as DDP


def micro(model, batch, k):
    loss = model(batch).mean() / k
    loss.backward()


def train(model, optimizer, loader, k):
    model = DDP(model)
    for batch in loader:
        for chunk in batch.chunk(k):
            micro(model, chunk, k)
        optimizer.step()
        optimizer.zero_grad()
"""


def _trainer(body: str) -> str:
    return textwrap.dedent(TRAINER).replace("        BODY\n", textwrap.indent(textwrap.dedent(body), " " * 8))


def _acc009(source: str, path: str = "train.py") -> list[int]:
    return [v.location.row for v in findings_of(source.encode(), "ACC009", path=path)]


def test_forward_and_backward_in_a_method_of_the_trainer() -> None:
    source = _trainer(PLAIN)
    assert _acc009(source) == [source.splitlines().index("            self.run_min_batch(next(loader), micro_step)") + 1]


@pytest.mark.parametrize("body", [NO_SYNC, TEACHER])
def test_method_that_switches_sync_off_or_runs_no_graph(body: str) -> None:
    assert _acc009(_trainer(body)) == []


def test_script_form() -> None:
    assert len(_acc009(textwrap.dedent(SCRIPT))) == 1


@pytest.mark.parametrize("body,found", [(PLAIN, 1), (NO_SYNC, 0)])
def test_ddp_built_in_another_module(tmp_path: Path, body: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "dist.py").write_text(
        "from torch.nn.parallel import DistributedDataParallel\n\n\n"
        "def wrap(model):\n    return DistributedDataParallel(model)\n"
    )
    source = _trainer(body).replace("self.model = DDP(model)", "self.model = wrap(model)")
    train = tmp_path / "trainer.py"
    train.write_text("from dist import wrap\n" + source)
    assert len(findings_of(train.read_bytes(), "ACC009", path=str(train))) == found
