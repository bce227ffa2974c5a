"""ACC004 where the clip sits in a project function that only clips (`self._clip_gradients(n)`),
called after `scaler.scale(loss).backward()` and before `scaler.step(optimizer)` of the
caller: the gradients it clips are still multiplied by the scale. The caller may be a loop or a
function without one (a trainer's `run_optimizer`, called once per batch): in one call nothing
can unscale in between. Reported at the clip when it is in the checked module, at the call when
it is in another one; report only. Clean twins: `unscale_` before the call or inside the helper,
no GradScaler step after the call, a backward that is not scaled."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

TRAINER = """
import torch
from torch import nn


class Task:
    def __init__(self, model, optimizer, max_norm):
        self.model = model
        self.optimizer = optimizer
        self.max_norm = max_norm
        self.scaler = torch.cuda.amp.GradScaler()

    def _clip_gradients(self, max_norm):
        nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)

    def run_optimizer(self, loss):
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        BEFORE
        if self.max_norm is not None:
            self._clip_gradients(self.max_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def train_step(self, batch):
        with torch.autocast("cuda"):
            loss = nn.functional.cross_entropy(self.model(batch[0]), batch[1])
        self.run_optimizer(loss)
"""

SCRIPT = """
import torch


def clip_gradients(model, max_norm):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)


def train(model, optimizer, loader, scaler):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        BEFORE
        clip_gradients(model, 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""

UNSCALE_TRAINER = "self.scaler.unscale_(self.optimizer)"
UNSCALE_SCRIPT = "scaler.unscale_(optimizer)"


def _acc004(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC004", path=path)


def _fill(template: str, before: str) -> str:
    return textwrap.dedent(template).replace("BEFORE", before)


def _line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("template", [TRAINER, SCRIPT])
def test_clip_only_helper_after_a_scaled_backward_is_reported_at_the_clip(template: str) -> None:
    source = _fill(template, "pass")
    found = _acc004(source)
    assert len(found) == 1
    assert found[0].location.row == _line_of(source, "clip_grad_norm_(")
    assert "clips before any `unscale_()`" in found[0].message
    assert found[0].fix is None


@pytest.mark.parametrize("template,unscale", [(TRAINER, UNSCALE_TRAINER), (SCRIPT, UNSCALE_SCRIPT)])
def test_unscale_before_the_call_is_clean(template: str, unscale: str) -> None:
    assert _acc004(_fill(template, unscale)) == []


def test_unscale_inside_the_helper_is_clean() -> None:
    source = _fill(TRAINER, "pass").replace(
        "    def _clip_gradients(self, max_norm):\n",
        "    def _clip_gradients(self, max_norm):\n        self.scaler.unscale_(self.optimizer)\n",
    )
    assert _acc004(source) == []


def test_no_scaler_step_after_the_call_is_clean() -> None:
    source = _fill(TRAINER, "pass").replace("self.scaler.step(self.optimizer)", "self.optimizer.step()")
    assert _acc004(source) == []


def test_backward_that_is_not_scaled_is_clean() -> None:
    source = _fill(SCRIPT, "pass").replace("scaler.scale(loss).backward()", "loss.backward()")
    source = source.replace("scaler.step(optimizer)", "optimizer.step()").replace("scaler.update()", "pass")
    assert _acc004(source) == []


@pytest.mark.parametrize("before,found", [("pass", 1), (UNSCALE_TRAINER, 0)])
def test_helper_in_another_module_is_reported_at_the_call(tmp_path: Path, before: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "clipping.py").write_text(
        "from torch import nn\n\n\ndef clip_gradients(model, max_norm):\n"
        "    nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
    )
    source = _fill(TRAINER, before).replace("self._clip_gradients(self.max_norm)", "clip_gradients(self.model, self.max_norm)")
    train = tmp_path / "task.py"
    train.write_text("from clipping import clip_gradients\n" + source)
    findings = _acc004(train.read_text(), str(train))
    assert len(findings) == found
    if found:
        assert "(clipping.py:" in findings[0].message
        assert findings[0].location.row == _line_of(train.read_text(), "clip_gradients(self.model")
