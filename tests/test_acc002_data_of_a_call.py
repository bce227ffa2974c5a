"""`.data` ends a graph whatever it is read from: `criterion(out, y).data` kept in an evaluation
total (or a training one) holds no graph, as `loss.data` does not. Twins: the loss itself is kept.
Forms: an evaluation function, a trainer's evaluation method, and the loss from another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch.nn.functional as F


def test(model, test_loader):
    model.eval()
    test_loss = 0
    for data, target in test_loader:
        output = model(data)
        test_loss += F.nll_loss(output, target, reduction="sum")VALUE
    print(test_loss / len(test_loader.dataset))
"""

TRAINER = """
import torch.nn.functional as F


class Runner:
    def __init__(self, model):
        self.model = model

    def evaluate(self, loader):
        self.model.eval()
        total = 0
        for x, y in loader:
            total += F.cross_entropy(self.model(x), y)VALUE
        print(total)
"""

LOSSES = """
import torch.nn.functional as F


def compute_loss(output, target):
    return F.nll_loss(output, target)
"""

MAIN = """
from losses import compute_loss


def test(model, test_loader):
    test_loss = 0
    for data, target in test_loader:
        test_loss += compute_loss(model(data), target)VALUE
    print(test_loss)
"""


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("value,found", [(".data", 0), (".data[0]", 0), ("", 1)])
def test_data_of_a_loss_call(template: str, value: str, found: int) -> None:
    assert len(_acc002(textwrap.dedent(template).replace("VALUE", value))) == found


@pytest.mark.parametrize("value,found", [(".data", 0), ("", 1)])
def test_data_of_a_helper_loss(tmp_path: Path, value: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text(textwrap.dedent(LOSSES))
    train = tmp_path / "evaluate.py"
    train.write_text(textwrap.dedent(MAIN).replace("VALUE", value))
    assert len(_acc002(train.read_text(), str(train))) == found
