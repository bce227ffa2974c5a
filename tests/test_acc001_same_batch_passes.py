"""An inner loop that runs the outer loop's one batch through several passes (sampled
sub-networks, augmentations of one batch), backward on each and one step after, sums one
objective: no ACC001. Twins: the passes fetch a batch each (`next(it)`) or take a slice of the
batch by the loop's target, or the count is named as accumulation steps: micro-batches of a
window, reported. Forms: a script, a trainer class, and the loss in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
def train(net, optimizer, criterion, loader, args):
    for images, labels in loader:
        optimizer.zero_grad()
        for n in range(COUNT):
            net.sample_active_subnet()
            BATCH
            output = net(images)
            loss = criterion(output, labels)
            loss.backward()
        optimizer.step()
"""

TRAINER = """
class Trainer:
    def __init__(self, net, optimizer, criterion, args):
        self.net = net
        self.optimizer = optimizer
        self.criterion = criterion
        self.args = args

    def train_epoch(self, loader):
        for images, labels in loader:
            self.optimizer.zero_grad()
            for n in range(self.COUNT):
                self.net.sample_active_subnet()
                BATCH
                loss = self.criterion(self.net(images), labels)
                loss.backward()
            self.optimizer.step()
"""

SAME = "pass"
FETCHED = "images, labels = next(extra)"
SLICED = "images = images[n::2]"


def _acc001(source: str, path: str = "train.py") -> list[int]:
    return [v.location.row for v in findings_of(source.encode(), "ACC001", path=path)]


def _script(count: str, batch: str) -> str:
    return textwrap.dedent(SCRIPT).replace("COUNT", count).replace("BATCH", batch)


def _trainer(count: str, batch: str) -> str:
    return textwrap.dedent(TRAINER).replace("COUNT", count).replace("BATCH", batch)


@pytest.mark.parametrize("form", [_script, _trainer])
def test_passes_over_one_batch_are_one_objective(form) -> None:
    assert _acc001(form("args.n_subnets", SAME)) == []


@pytest.mark.parametrize("form", [_script, _trainer])
@pytest.mark.parametrize("batch", [FETCHED, SLICED])
def test_passes_that_take_new_data_are_micro_batches(form, batch: str) -> None:
    assert len(_acc001(form("args.n_subnets", batch))) == 1


@pytest.mark.parametrize("form", [_script, _trainer])
def test_count_named_as_accumulation_steps_is_a_window(form) -> None:
    assert len(_acc001(form("args.gradient_accumulation_steps", SAME))) == 1


@pytest.mark.parametrize("batch,found", [(SAME, 0), (FETCHED, 1)])
def test_loss_in_another_module(tmp_path: Path, batch: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text("def criterion(output, target):\n    return (output - target).pow(2).mean()\n")
    train = tmp_path / "train.py"
    source = "from losses import criterion\n" + _script("args.n_subnets", batch).replace(
        "def train(net, optimizer, criterion, loader, args)", "def train(net, optimizer, loader, args)"
    )
    train.write_text(source)
    assert len(findings_of(train.read_bytes(), "ACC001", path=str(train))) == found
