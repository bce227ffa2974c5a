"""ACC009 and a model wrapped in DDP by a conditional expression whose other choice is the bare
model (`model = DDP(net, device_ids=[gpu]) if args.distributed else net`): the same as `if
args.distributed: model = DDP(net)`, so a window that accumulates on it without `no_sync()` is
reported. Twins: a choice between two different models (`DDP(net) if cond else other`) is not
read as the wrapping of one model, and `no_sync()` on the non-final micro-steps keeps it clean.
Forms: a script whose loop is in the same function, and the model handed to a loop function."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel


def train_one_epoch(loader, model, optimizer, criterion, args):
    for batch_idx, (x, y) in enumerate(loader):
        last = (batch_idx + 1) % args.grad_accum == 0
        with SYNC:
            loss = criterion(model(x), y) / args.grad_accum
            loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()


def main(args, net, other, loader, criterion):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    model = WRAPPED
    for epoch in range(args.epochs):
        train_one_epoch(loader, model, optimizer, criterion, args)
"""

NO_SYNC = "contextlib.nullcontext() if last else model.no_sync()"


def _script(wrapped: str, sync: str = "contextlib.nullcontext()") -> str:
    return textwrap.dedent(SCRIPT).replace("WRAPPED", wrapped).replace("SYNC", sync)


@pytest.mark.parametrize(
    "wrapped",
    [
        "DistributedDataParallel(net, device_ids=[args.gpu]) if args.distributed else net",
        "net if not args.distributed else DistributedDataParallel(net)",
    ],
)
def test_conditional_wrapping_of_one_model_is_reported(wrapped: str) -> None:
    found = findings_of(_script(wrapped), "ACC009")
    assert len(found) == 1 and "no_sync" in found[0].message


def test_choice_between_two_models_is_not_read_as_a_wrapping() -> None:
    assert findings_of(_script("DistributedDataParallel(net) if args.distributed else other"), "ACC009") == []


def test_no_sync_on_the_non_final_micro_steps_is_clean() -> None:
    source = _script("DistributedDataParallel(net) if args.distributed else net", NO_SYNC)
    assert findings_of(source, "ACC009") == []


def test_plain_wrapping_still_reported() -> None:
    assert len(findings_of(_script("DistributedDataParallel(net)"), "ACC009")) == 1
