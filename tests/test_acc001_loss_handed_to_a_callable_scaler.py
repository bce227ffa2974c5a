"""ACC001 through a callable loss scaler: `scaler(loss, optimizer, params, update=(i + 1) % k
== 0)` on an instance of a project class whose `__call__` runs `self._scaler.scale(loss).backward()`
on every call and steps only under its `update` flag. The loss is the one handed in at the call
(`__call__` is run by calling the instance, not by its name), so an undivided loss is reported in
`__call__`. Twins: the loss divided by k at the call (clean). Forms: the flag passed by keyword and
by position, and the scaler class in another module of the project."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCALER = """
import torch
from torch.cuda.amp import GradScaler


class NativeScalerWithGradAccum:
    def __init__(self):
        self._scaler = GradScaler()

    def __call__(self, loss, optimizer, parameters, grad_norm=None, update=True):
        self._scaler.scale(loss).backward()
        if update:
            if grad_norm:
                self._scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(parameters, grad_norm)
            self._scaler.step(optimizer)
            self._scaler.update()
            optimizer.zero_grad()
"""

LOOP = """

def train_one_epoch(loader, model, optimizer, criterion, args, scaler):
    for batch_idx, (x, y) in enumerate(loader):
        loss = LOSS
        scaler(loss, optimizer, model.parameters(), FLAG)


def main(args, model, loader, criterion):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = NativeScalerWithGradAccum()
    for epoch in range(args.epochs):
        train_one_epoch(loader, model, optimizer, criterion, args, scaler)
"""

UNDIVIDED = "criterion(model(x), y)"
DIVIDED = "criterion(model(x), y) / args.grad_accum"
FLAGS = ["update=(batch_idx + 1) % args.grad_accum == 0", "args.grad_norm, (batch_idx + 1) % args.grad_accum == 0"]


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def _source(loss: str, flag: str) -> str:
    return textwrap.dedent(SCALER) + textwrap.dedent(LOOP).replace("LOSS", loss).replace("FLAG", flag)


@pytest.mark.parametrize("flag", FLAGS)
def test_undivided_loss_handed_to_the_scaler_is_reported_in_call(flag: str) -> None:
    source = _source(UNDIVIDED, flag)
    found = findings_of(source, "ACC001")
    assert [f.location.row for f in found] == [_line(source, "self._scaler.scale(loss).backward()")]
    assert "`args.grad_accum`" in found[0].message


@pytest.mark.parametrize("flag", FLAGS)
def test_loss_divided_at_the_call_is_clean(flag: str) -> None:
    assert findings_of(_source(DIVIDED, flag), "ACC001") == []


@pytest.mark.parametrize("loss,found", [(UNDIVIDED, 1), (DIVIDED, 0)])
def test_scaler_in_another_module(tmp_path: Path, loss: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "scaler.py").write_text(textwrap.dedent(SCALER))
    engine = tmp_path / "engine.py"
    engine.write_text("import torch\nfrom scaler import NativeScalerWithGradAccum\n" + textwrap.dedent(LOOP).replace("LOSS", loss).replace("FLAG", FLAGS[0]))
    assert len(findings_of(engine.read_text(), "ACC001", path=str(engine))) == found


TRAINER = """

class Trainer:
    def __init__(self, model, optimizer, criterion, args):
        self.model, self.optimizer, self.criterion, self.args = model, optimizer, criterion, args
        self.loss_scaler = NativeScalerWithGradAccum()

    def train_one_epoch(self, loader):
        for batch_idx, (x, y) in enumerate(loader):
            loss = LOSS
            self.loss_scaler(loss, self.optimizer, self.model.parameters(), update=(batch_idx + 1) % self.args.grad_accum == 0)
"""


@pytest.mark.parametrize("loss,found", [("self.criterion(self.model(x), y)", 1), ("self.criterion(self.model(x), y) / self.args.grad_accum", 0)])
def test_scaler_held_by_a_trainer(loss: str, found: int) -> None:
    source = textwrap.dedent(SCALER) + textwrap.dedent(TRAINER).replace("LOSS", loss)
    assert len(findings_of(source, "ACC001")) == found
