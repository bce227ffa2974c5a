"""ACC009 and a loop of micro-batch passes (backward on every pass, the step once after the loop;
each pass also runs a frozen encoder on the batch first) whose passes run inside a project helper that
switches DDP sync itself (`with misc.ddp_sync(ddp, last_round):`, entering `module.no_sync()` on
all rounds but the last): the helper controls sync, so no finding. Twin: a helper that enters
something else (`autocast`) leaves every pass reducing, which is reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of
from tests.test_heldout_lessons import SYNC_HELPER  # EDM's `misc.ddp_sync`, with the control it enters

ROUNDS = """
import torch
from torch_utils import misc


def training_loop(net, encoder, device, optimizer, loss_fn, batches, rounds, lr):
    ddp = torch.nn.parallel.DistributedDataParallel(net, device_ids=[device])
    while True:
        optimizer.zero_grad(set_to_none=True)
        for round_idx in range(rounds):
            with misc.ddp_sync(ddp, round_idx == rounds - 1):
                images, labels = next(batches)
                images = encoder.encode_latents(images.to(device))
                loss = loss_fn(net=ddp, images=images, labels=labels)
                loss.sum().mul(1.0 / rounds).backward()
        for g in optimizer.param_groups:
            g["lr"] = lr
        optimizer.step()
"""


def _found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, control: str) -> list[tuple[str, str]]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "torch_utils").mkdir()
    (tmp_path / "torch_utils" / "__init__.py").write_text("")
    (tmp_path / "torch_utils" / "misc.py").write_text(SYNC_HELPER.format(control=control).lstrip())
    source = textwrap.dedent(ROUNDS).lstrip()
    (tmp_path / "loop.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    return [(f.code, f.message) for f in findings_of(source, path="loop.py")]


def test_a_sync_helper_around_each_pass_controls_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _found(tmp_path, monkeypatch, "no_sync") == []


def test_a_helper_that_enters_something_else_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _found(tmp_path, monkeypatch, "autocast")
    # read as a loop of passes stepped after it (the path this helper check guards)
    assert [code for code, _ in found] == ["ACC009"] and "every pass of this loop of micro-batches" in found[0][1]
