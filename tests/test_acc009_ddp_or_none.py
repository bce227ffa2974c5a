"""ACC009 and a DDP model chosen at the call: `train(ddp_model if args.distributed else model)`,
where `ddp_model` is `DistributedDataParallel(model)` on a distributed run and `None` otherwise
(made in the function, or returned in one slot of a factory's tuple from another module). On a
distributed run the loop accumulates on the DDP model, so a window without `no_sync()` is
reported. Also the conditional wrappings `DDP(module=net) if d else net` and `DDP(net.cuda())
if d else net.cuda()`. Twins: `no_sync()` on the non-final micro-steps, a choice between two
models that are not a wrapping, and a slot that is never a DDP model stay clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

LOOP = """
def train_one_epoch(loader, model, optimizer, criterion, args):
    for batch_idx, (x, y) in enumerate(loader):
        last = (batch_idx + 1) % args.grad_accum == 0
        with SYNC:
            loss = criterion(model(x), y) / args.grad_accum
            loss.backward()
        if last:
            optimizer.step()
            optimizer.zero_grad()
"""

INLINE = """
import contextlib
import torch
from torch.nn.parallel import DistributedDataParallel
""" + LOOP + """

def main(args, model, other, loader, criterion):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    MADE
    for epoch in range(args.epochs):
        train_one_epoch(loader, CHOSEN, optimizer, criterion, args)
"""

NO_SYNC = "contextlib.nullcontext() if last else model.no_sync()"
MADE_BY_IFEXP = "ddp_model = DistributedDataParallel(model, device_ids=[args.gpu]) if args.distributed else None"
MADE_BY_IF = """if args.distributed:
        ddp_model = DistributedDataParallel(model, device_ids=[args.gpu])
    else:
        ddp_model = None"""


def _inline(made: str, chosen: str, sync: str = "contextlib.nullcontext()") -> str:
    source = textwrap.dedent(INLINE).replace("MADE", made).replace("CHOSEN", chosen)
    return source.replace("SYNC", sync)


@pytest.mark.parametrize("made", [MADE_BY_IFEXP, MADE_BY_IF])
@pytest.mark.parametrize("chosen", ["ddp_model if args.distributed else model", "model if not args.distributed else ddp_model"])
def test_ddp_or_none_chosen_at_the_call_is_reported(made: str, chosen: str) -> None:
    found = findings_of(_inline(made, chosen), "ACC009")
    assert len(found) == 1 and "ddp_model" in found[0].message and "no_sync" in found[0].message


@pytest.mark.parametrize("made", [MADE_BY_IFEXP, MADE_BY_IF])
def test_no_sync_on_the_non_final_micro_steps_is_clean(made: str) -> None:
    assert findings_of(_inline(made, "ddp_model if args.distributed else model", NO_SYNC), "ACC009") == []


def test_choice_between_the_wrapper_and_what_it_holds_is_clean() -> None:
    # `model.module` on a distributed run, the bare model otherwise: never the DDP model
    made = "if args.distributed:\n        model = DistributedDataParallel(model, device_ids=[args.gpu])"
    assert findings_of(_inline(made, "model.module if args.distributed else model"), "ACC009") == []
    assert len(findings_of(_inline(made, "model"), "ACC009")) == 1


def test_a_choice_handed_on_by_a_second_function_is_followed() -> None:
    source = _inline(MADE_BY_IF, "ddp_model if args.distributed else model")
    source = source.replace(
        "        train_one_epoch(loader, ddp_model if args.distributed else model, optimizer, criterion, args)",
        "        fit(loader, ddp_model, optimizer, criterion, args)",
    ) + textwrap.dedent("""

        def fit(loader, net, optimizer, criterion, args):
            train_one_epoch(loader, net if not args.frozen else args.frozen_model, optimizer, criterion, args)
        """)
    found = findings_of(source, "ACC009")
    assert len(found) == 1 and "ddp_model" in found[0].message


def test_choice_between_two_unwrapped_models_is_clean() -> None:
    made = "ddp_model = other if args.distributed else None"
    assert findings_of(_inline(made, "ddp_model if args.distributed else model"), "ACC009") == []


@pytest.mark.parametrize(
    "wrapped",
    [
        "DistributedDataParallel(module=model, device_ids=[args.gpu]) if args.distributed else model",
        "DistributedDataParallel(model.cuda(), device_ids=[args.gpu]) if args.distributed else model.cuda()",
        "model.to(args.device) if not args.distributed else DistributedDataParallel(model.to(args.device))",
    ],
)
def test_conditional_wrapping_of_a_moved_or_keyword_model_is_reported(wrapped: str) -> None:
    found = findings_of(_inline(f"net = {wrapped}", "net"), "ACC009")
    assert len(found) == 1 and "no_sync" in found[0].message


@pytest.mark.parametrize(
    "wrapped",
    [
        "DistributedDataParallel(model.cuda()) if args.distributed else other.cuda()",
        "DistributedDataParallel(module=model) if args.distributed else other",
    ],
)
def test_conditional_choice_of_another_model_is_clean(wrapped: str) -> None:
    assert findings_of(_inline(f"net = {wrapped}", "net"), "ACC009") == []


FACTORY = """
import torch
from torch.nn.parallel import DistributedDataParallel


def get_ema_ddp_model(model, args):
    if args.ema:
        ema_model = EmaModel(model)
    else:
        ema_model = None

    if args.distributed:
        ddp_model = SLOT
    else:
        ddp_model = OTHER

    return model, ema_model, ddp_model
"""

DRIVER = """
import contextlib
import torch
from pkg.factory import get_ema_ddp_model
""" + LOOP + """

def main(args, model, loader, criterion):
    model, ema_model, ddp_model = get_ema_ddp_model(model, args)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_one_epoch(loader, ddp_model if args.distributed else model, optimizer, criterion, args)
"""


def _project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slot: str, sync: str = "contextlib.nullcontext()",
    other: str = "None", early: bool = False,
) -> list:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    factory = textwrap.dedent(FACTORY).replace("SLOT", slot).replace("OTHER", other).lstrip()
    if early:  # `if not args.distributed: return model, ema_model, None` before the wrapping
        factory = factory.replace("    if args.distributed:\n", "    if not args.distributed:\n        return model, ema_model, None\n    if args.distributed:\n")
    (tmp_path / "pkg" / "factory.py").write_text(factory)
    driver = textwrap.dedent(DRIVER).replace("SYNC", sync).lstrip()
    (tmp_path / "train.py").write_text(driver)
    monkeypatch.chdir(tmp_path)
    return findings_of(driver, "ACC009", path="train.py")


def test_factory_slot_that_is_ddp_or_none_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _project(tmp_path, monkeypatch, "DistributedDataParallel(model, device_ids=[args.gpu])")
    assert len(found) == 1 and "ddp_model" in found[0].message


@pytest.mark.parametrize("other,early", [("model", False), ("None", True)])
def test_factory_slot_bare_model_or_early_none_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: str, early: bool
) -> None:
    found = _project(tmp_path, monkeypatch, "DistributedDataParallel(model)", other=other, early=early)
    assert len(found) == 1 and "ddp_model" in found[0].message


def test_factory_slot_of_another_model_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _project(tmp_path, monkeypatch, "DistributedDataParallel(model)", other="ema_model") == []


def test_factory_slot_with_no_sync_in_the_loop_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _project(tmp_path, monkeypatch, "DistributedDataParallel(model)", NO_SYNC) == []


def test_factory_slot_that_is_never_a_ddp_model_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _project(tmp_path, monkeypatch, "torch.compile(model)") == []
