"""The losses of several backward passes collected in a list (`outs.append(loss)`), then their
mean handed to a meter that keeps a running sum (`meter.update(sum(outs) / len(outs))`, or a
project helper `list_mean(outs)`): every iteration's graphs stay alive (ACC002). Twins: the list
holds `loss.item()`, or values that are not handed to backward (a list of predictions whose use is
not in sight), or the mean is detached: clean. Forms: a script, a trainer class, and the meter and
the helper in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

METER = """
class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def list_mean(x):
    return sum(x) / len(x)
"""

SCRIPT = """
def train(model, optimizer, loader, n_subnets):
    losses = AverageMeter()
    for x, y in loader:
        optimizer.zero_grad()
        outs = []
        for _ in range(n_subnets):
            model.sample_active_subnet()
            loss = model(x, y)
            outs.append(APPENDED)
            loss.backward()
        optimizer.step()
        losses.update(MEAN, x.size(0))
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, n_subnets):
        self.model = model
        self.optimizer = optimizer
        self.n_subnets = n_subnets

    def train_epoch(self, loader):
        losses = AverageMeter()
        for x, y in loader:
            self.optimizer.zero_grad()
            outs = []
            for _ in range(self.n_subnets):
                loss = self.model(x, y)
                outs.append(APPENDED)
                loss.backward()
            self.optimizer.step()
            losses.update(MEAN, x.size(0))
"""

INLINE = "sum(outs) / len(outs)"
HELPER = "list_mean(outs)"


def _source(template: str, appended: str = "loss", mean: str = INLINE) -> str:
    body = textwrap.dedent(template).replace("APPENDED", appended).replace("MEAN", mean)
    return textwrap.dedent(METER) + body


def _acc002(source: str) -> list:
    return findings_of(source.encode(), "ACC002", path="train.py")


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("mean", [INLINE, HELPER])
def test_mean_of_backwarded_losses_kept_by_a_meter(template: str, mean: str) -> None:
    source = _source(template, mean=mean)
    found = _acc002(source)
    assert len(found) == 1
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "losses.update(" in line)


def test_inline_mean_gets_the_detach_fix() -> None:
    (found,) = _acc002(_source(SCRIPT))
    assert found.fix is not None and "(sum(outs) / len(outs)).detach()" in "".join(e.content for e in found.fix.edits)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("appended,mean", [("loss.item()", INLINE), ("x.argmax(1)", INLINE), ("loss", f"({INLINE}).detach()")])
def test_numbers_other_values_or_a_detached_mean(template: str, appended: str, mean: str) -> None:
    assert _acc002(_source(template, appended, mean)) == []


@pytest.mark.parametrize("appended,found", [("loss", 1), ("loss.item()", 0)])
def test_meter_and_helper_in_another_module(tmp_path: Path, appended: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "meters.py").write_text(textwrap.dedent(METER))
    train = tmp_path / "train.py"
    body = textwrap.dedent(SCRIPT).replace("APPENDED", appended).replace("MEAN", HELPER)
    train.write_text("from meters import AverageMeter, list_mean\n" + body)
    assert len(findings_of(train.read_bytes(), "ACC002", path=str(train))) == found
