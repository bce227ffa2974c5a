"""ACC001 and a loss averaged over the ranks before backward (`loss = reduce_mean(loss,
args.world_size)` whose body is `val = val.clone(); dist.reduce(val, ...); val = val /
world_size`, or `loss / dist.get_world_size()` written out): a division by the number of
processes is a mean over ranks, never the accumulation window, so the loss is still k times too
large. A project function that returns what it is handed up to copies, casts and that mean is read
at each call with the argument of that call. Twins: the loss divided by k as well (clean), and a
helper that divides by what it is handed as k (clean). Forms: the helper beside the loop, and in a
package that re-exports it from its `__init__`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

HELPER = """
import torch.distributed as dist


def reduce_mean(val, world_size):
    val = val.clone()
    dist.reduce(val, 0, dist.ReduceOp.SUM)
    val = val / world_size
    return val


def scale_down(val, factor):
    return val / factor
"""

LOOP = """
def train_one_epoch(loader, model, optimizer, criterion, args):
    for batch_idx, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        if args.distributed:
            loss = REDUCED
        loss.backward()
        if (batch_idx + 1) % args.grad_accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _loop(reduced: str) -> str:
    return textwrap.dedent(LOOP).replace("REDUCED", reduced)


@pytest.mark.parametrize(
    "reduced",
    ["reduce_mean(loss, args.world_size)", "loss / dist.get_world_size()", "reduce_mean(loss, args.world_size).float()"],
)
def test_mean_over_ranks_is_no_window_division(reduced: str) -> None:
    found = findings_of(textwrap.dedent(HELPER) + _loop(reduced), "ACC001")
    assert len(found) == 1 and "`args.grad_accum`" in found[0].message


@pytest.mark.parametrize(
    "reduced",
    ["reduce_mean(loss, args.world_size) / args.grad_accum", "scale_down(loss, args.grad_accum)", "reduce_mean(loss / args.grad_accum, args.world_size)"],
)
def test_loss_divided_by_k_as_well_is_clean(reduced: str) -> None:
    loop = _loop(reduced).replace("        if args.distributed:\n            loss =", "        loss =")
    assert "distributed" not in loop
    assert findings_of(textwrap.dedent(HELPER) + loop, "ACC001") == []


def test_helper_reexported_by_a_package(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    package = tmp_path / "pkg" / "utils"
    package.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .metrics import reduce_mean\n")
    (package / "metrics.py").write_text(textwrap.dedent(HELPER))
    script = tmp_path / "engine.py"
    script.write_text("from pkg.utils import reduce_mean\n" + _loop("reduce_mean(loss, args.world_size)"))
    found = findings_of(script.read_text(), "ACC001", path=str(script))
    assert len(found) == 1


@pytest.mark.parametrize("reduced", ["loss / args.world_size", "reduce_mean(loss, args.world_size)"])
def test_every_path_divided_by_ranks_only_is_reported(reduced: str) -> None:
    loop = _loop(reduced).replace("        if args.distributed:\n            loss =", "        loss =")
    assert len(findings_of(textwrap.dedent(HELPER) + loop, "ACC001")) == 1


RANK_HELPERS = """
import torch
import torch.distributed as dist


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= n
    return rt


def reduce_in_place(tensor, world_size):
    rt = tensor.clone()
    dist.all_reduce(rt)
    rt.div_(world_size)
    return rt
"""

INLINE = """
def train_one_epoch(loader, model, optimizer, criterion, args):
    for batch_idx, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        MEAN
        loss.backward()
        if (batch_idx + 1) % args.grad_accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.mark.parametrize(
    "mean",
    [
        "loss = loss.div(dist.get_world_size())",
        "loss = torch.div(loss, args.world_size)",
        "loss.div_(args.world_size)",
        "loss /= args.world_size",
        "loss = reduce_tensor(loss, args.world_size)",
        "loss = reduce_in_place(loss, args.world_size)",
    ],
)
def test_every_form_of_a_mean_over_ranks(mean: str) -> None:
    source = textwrap.dedent(RANK_HELPERS) + textwrap.dedent(INLINE).replace("MEAN", mean)
    assert len(findings_of(source, "ACC001")) == 1
    divided = source.replace("loss.backward()", "(loss / args.grad_accum).backward()")
    assert findings_of(divided, "ACC001") == []


def test_helper_dividing_by_what_the_caller_hands_as_k_is_clean() -> None:
    source = textwrap.dedent(RANK_HELPERS) + textwrap.dedent(INLINE).replace("MEAN", "loss = reduce_tensor(loss, args.grad_accum)")
    assert findings_of(source, "ACC001") == []
