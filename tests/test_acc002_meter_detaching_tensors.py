"""A meter whose `update` detaches what it is handed when that is a tensor (`if isinstance(val,
torch.Tensor): val = val.detach().clone()`, or `.item()`, or with no test at all) before it adds
it to a total kept on the object: every tensor that reaches the total was detached, and what the
test lets through untouched is no tensor, so a loss handed to it keeps no graph (silent). A
detach under any other condition (`if self.detach_values:`) leaves the other path keeping the
graph, and is still reported. Forms: a script with the meter beside it, and the meter in another
module of the project."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

METER = """
import torch


class Metric:
    def __init__(self, detach_values=True):
        self.sum = 0
        self.n = 0
        self.detach_values = detach_values

    def update(self, val, n=1):
        GUARD
            val = DETACHED
        self.sum += val * n
        self.n += n
"""

SCRIPT = """

def train_one_epoch(model, optimizer, loader, criterion):
    loss_m = Metric()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_m.update(loss, x.size(0))
    return loss_m.sum / loss_m.n
"""


def _meter(guard: str, detached: str) -> str:
    source = textwrap.dedent(METER).replace("DETACHED", detached)
    if guard:
        return source.replace("GUARD", guard)
    return source.replace("        GUARD\n", "").replace("            val = ", "        val = ")


CLEAN = [
    ("if isinstance(val, torch.Tensor):", "val.detach().clone()"),
    ("if isinstance(val, torch.Tensor):", "val.item()"),
    ("if torch.is_tensor(val):", "val.detach()"),
    ("if isinstance(val, (torch.Tensor, torch.nn.Parameter)):", "val.detach()"),
    ("", "val.detach()"),
]


@pytest.mark.parametrize("guard,detached", CLEAN)
def test_meter_that_detaches_tensors_is_clean(guard: str, detached: str) -> None:
    assert findings_of(_meter(guard, detached) + textwrap.dedent(SCRIPT), "ACC002") == []


def test_detach_under_another_condition_is_reported() -> None:
    source = _meter("if self.detach_values:", "val.detach()") + textwrap.dedent(SCRIPT)
    found = findings_of(source, "ACC002")
    assert len(found) == 1 and "`Metric.update` keeps it in `self.sum`" in found[0].message


def test_tensor_method_of_the_detached_value_is_clean() -> None:
    source = _meter("if isinstance(val, torch.Tensor):", "val.detach()").replace("self.sum += val * n", "self.sum += n * val.float()")
    assert findings_of(source + textwrap.dedent(SCRIPT), "ACC002") == []


def test_meter_that_never_detaches_is_reported() -> None:
    kept = textwrap.dedent(METER).replace("        GUARD\n            val = DETACHED\n", "")
    assert "detach" not in kept.split("def update")[1]
    assert len(findings_of(kept + textwrap.dedent(SCRIPT), "ACC002")) == 1


@pytest.mark.parametrize("guard,found", [("if isinstance(val, torch.Tensor):", 0), ("if self.detach_values:", 1)])
def test_meter_in_another_module(tmp_path: Path, guard: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "metrics.py").write_text(_meter(guard, "val.detach().clone()"))
    script = tmp_path / "engine.py"
    script.write_text("from metrics import Metric\n" + textwrap.dedent(SCRIPT))
    assert len(findings_of(script.read_text(), "ACC002", path=str(script))) == found


SHAPED = """
import torch


class Metric:
    def __init__(self):
        self.sum = 0
        self.n = 0

    def update(self, val, n=1):
BODY
        self.sum += val * n
        self.n += n
"""

ELIF = """        if isinstance(val, (int, float)):
            pass
        elif isinstance(val, torch.Tensor):
            val = val.detach()"""
EARLY_RETURN = """        if not isinstance(val, torch.Tensor):
            self.sum += val * n
            self.n += n
            return
        val = val.detach()"""
TENSORS_KEPT_EARLY = """        if isinstance(val, torch.Tensor):
            self.sum += val * n
            return
        val = float(val)"""


@pytest.mark.parametrize("body,found", [(ELIF, 0), (EARLY_RETURN, 0), (TENSORS_KEPT_EARLY, 1)])
def test_type_tests_of_the_value(body: str, found: int) -> None:
    source = textwrap.dedent(SHAPED).replace("BODY", body) + textwrap.dedent(SCRIPT)
    assert len(findings_of(source, "ACC002")) == found
