"""The window flag computed in the loop (`update_grad = (step + 1) % k == 0`) and passed to a
project loss scaler that runs backward on every call and steps only `if update_grad:` is read as
the step gate, like the test passed whole: without an end-of-data clause the last batches of each
epoch never reach the step (ACC005). Twin: the flag with `or step + 1 == len(loader)` (clean).
Form: the scaler class in a package module re-exported by its `__init__`, the loop in a script."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of

SCALER = """
import torch


class ScalerWithNorm:
    def __init__(self, enabled=True):
        self._scaler = torch.cuda.amp.GradScaler(enabled=enabled)

    def __call__(self, loss, optimizer, parameters=None, update_grad=True):
        self._scaler.scale(loss).backward()
        if update_grad:
            self._scaler.step(optimizer)
            self._scaler.update()
"""

TRAIN = """
from pkg.utils import ScalerWithNorm as NativeScaler


def main(args, model, optimizer, loader):
    loss_scaler = NativeScaler(enabled=True)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, loss_scaler, args.accum_iter)


def train_one_epoch(model, data_loader, optimizer, loss_scaler, accum_iter):
    for step, x in enumerate(data_loader):
        update_grad = FLAG
        loss = model(x) / accum_iter
        loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=update_grad)
        if update_grad:
            optimizer.zero_grad()
"""


def _acc005(tmp_path: Path, flag: str) -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    utils = tmp_path / "pkg" / "utils"
    utils.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (utils / "__init__.py").write_text("from .native_scaler import ScalerWithNorm\n")
    (utils / "native_scaler.py").write_text(textwrap.dedent(SCALER))
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(TRAIN).replace("FLAG", flag))
    return [v.location.row for v in findings_of(train.read_bytes(), "ACC005", path=str(train))]


def test_flag_passed_to_a_project_scaler_is_the_gate(tmp_path: Path) -> None:
    assert _acc005(tmp_path, "(step + 1) % accum_iter == 0") == [15]


def test_flag_with_an_end_of_data_clause_is_clean(tmp_path: Path) -> None:
    assert _acc005(tmp_path, "(step + 1) % accum_iter == 0 or step + 1 == len(data_loader)") == []
