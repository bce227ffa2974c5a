"""ACC005 on a step gated on `% k` of a count that runs on across epochs (`ni = i + nb * epoch`,
or `global_step += 1` at every micro-step, never set anew in the epochs), while the optimizer is
zeroed at the start of each epoch, before its batch loop: the micro-batches backwarded since the
last step of an epoch are wiped there, computed and never applied (YOLOv7's shape). Report only,
at that zeroing. A count that restarts with each epoch, no zeroing at the epoch's start, a flush
after the batch loop or an end-of-data clause is not this. Forms: a script, a trainer class, and a
loop whose zeroing helper lives in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings, row

SCRIPT = """
import torch


def train(model, loader, optimizer, epochs, accumulate):
    nb = len(loader)
    COUNT_START
    for epoch in range(epochs):
        model.train()
        EPOCH_START
        for i, (imgs, targets) in enumerate(loader):
            COUNT
            loss = model(imgs, targets).mean() / accumulate
            loss.backward()
            if GATE:
                optimizer.step()
                optimizer.zero_grad()
        AFTER
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, optimizer, accumulate):
        self.model, self.loader, self.optimizer = model, loader, optimizer
        self.accumulate = accumulate
        self.global_step = 0

    def fit(self, epochs):
        for epoch in range(epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for batch in self.loader:
                loss = self.model(batch).mean() / self.accumulate
                loss.backward()
                self.global_step += 1
                if self.global_step % self.accumulate == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad(set_to_none=True)
"""

HELPERS = """
def reset_gradients(optimizer):
    optimizer.zero_grad()
"""

DRIVER = """
from utils.optim import reset_gradients


def train(model, loader, optimizer, epochs, accumulate):
    nb = len(loader)
    for epoch in range(epochs):
        reset_gradients(optimizer)
        for i, batch in enumerate(loader):
            ni = epoch * nb + i
            loss = model(batch).mean() / accumulate
            loss.backward()
            if (ni + 1) % accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def _script(
    count: str = "ni = i + nb * epoch", gate: str = "ni % accumulate == 0", epoch_start: str = "optimizer.zero_grad()",
    after: str = "pass", count_start: str = "pass",
) -> str:
    return (
        SCRIPT.replace("COUNT_START", count_start).replace("EPOCH_START", epoch_start)
        .replace("COUNT", count).replace("GATE", gate).replace("AFTER", after)
    )


def _acc005(source: str, path: str = "t.py") -> list[int]:
    return [line for code, line in findings(source, path) if code == "ACC005"]


@pytest.mark.parametrize("count,gate,count_start", [
    ("ni = i + nb * epoch", "ni % accumulate == 0", "pass"),
    ("ni = epoch * len(loader) + i", "(ni + 1) % accumulate == 0", "pass"),
    ("step += 1", "step % accumulate == 0", "step = 0"),
])
def test_script_count_across_epochs_zeroed_at_each_epoch_start_is_reported_there(count, gate, count_start) -> None:
    source = _script(count=count, gate=gate, count_start=count_start)
    assert _acc005(source) == [row(source, "        optimizer.zero_grad()")]


def test_the_message_names_the_gate_and_the_count() -> None:
    from accumlint.engine import check_source
    import textwrap

    result = check_source(textwrap.dedent(_script()).lstrip(), "t.py")
    [finding] = [f for f in result.findings if f.code == "ACC005"]
    assert "`ni % accumulate == 0`" in finding.message and "`ni` runs on across epochs" in finding.message
    assert finding.fix is None


def test_trainer_count_across_epochs_zeroed_at_each_epoch_start_is_reported() -> None:
    assert _acc005(TRAINER) == [row(TRAINER, "self.optimizer.zero_grad(set_to_none=True)")]


def test_zeroing_helper_in_another_module_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "optim.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(DRIVER)
    monkeypatch.chdir(tmp_path)
    assert _acc005(DRIVER, "train.py") == [row(DRIVER, "reset_gradients(optimizer)", last=True)]


@pytest.mark.parametrize("count,gate,epoch_start,after,count_start", [
    ("ni = i + nb * epoch", "ni % accumulate == 0", "pass", "pass", "pass"),  # nothing wipes the carried window
    ("ni = i + nb * epoch", "(ni + 1) % accumulate == 0 or i + 1 == nb", "optimizer.zero_grad()", "pass", "pass"),
    ("ni = i + nb * epoch", "ni % accumulate == 0", "optimizer.zero_grad()", "optimizer.step()", "pass"),  # flushed
    ("step += 1", "step % accumulate == 0", "optimizer.zero_grad()\n        step = 0", "pass", "step = 0"),
])
def test_script_clean_twins(count, gate, epoch_start, after, count_start) -> None:
    assert _acc005(_script(count, gate, epoch_start, after, count_start)) == []


def test_count_restarting_each_epoch_is_the_plain_dropped_window_not_a_wipe() -> None:
    source = _script(count="pass", gate="(i + 1) % accumulate == 0")
    from accumlint.engine import check_source
    import textwrap

    result = check_source(textwrap.dedent(source).lstrip(), "t.py")
    assert all("wipes" not in f.message for f in result.findings if f.code == "ACC005")
