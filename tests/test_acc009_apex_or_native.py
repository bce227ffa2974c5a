"""ACC009's message names the wrapping whose `no_sync()` its advice is about: where a model is
wrapped in Apex's DDP on one branch and torch's on the other (timm-style scripts), the finding
points at torch's wrapping, since Apex's wrapper has no `no_sync()`."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of, row

SCRIPT = """
from apex.parallel import DistributedDataParallel as ApexDDP
from torch.nn.parallel import DistributedDataParallel as NativeDDP


def train_one_epoch(loader, model, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean() / accum
        loss.backward()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()


def main(args, model, loader, optimizer):
    if args.distributed:
        if args.apex:
            model = ApexDDP(model, delay_allreduce=True)
        else:
            model = NativeDDP(model, device_ids=[args.local_rank])
    for epoch in range(args.epochs):
        train_one_epoch(loader, model, optimizer, args.accum)
"""


def test_the_torch_wrapping_is_named() -> None:
    source = textwrap.dedent(SCRIPT).lstrip()
    found = findings_of(source, "ACC009")
    assert len(found) == 1
    assert f"wrapped at line {row(source, 'model = NativeDDP(')}" in found[0].message
    assert "`model.no_sync()`" in found[0].message


def test_an_apex_wrapping_alone_is_named_as_it_is() -> None:
    source = textwrap.dedent(SCRIPT).lstrip().replace("            model = NativeDDP(model, device_ids=[args.local_rank])", "            pass")
    found = findings_of(source, "ACC009")
    assert len(found) == 1 and f"wrapped at line {row(source, 'model = ApexDDP(')}" in found[0].message
    assert "disable_allreduce" in found[0].message  # apex's own advice
