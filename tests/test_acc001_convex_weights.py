"""Two loss terms weighed against each other by one name (`w * a + (1 - w) * b`) are a
weighted loss, not a loss divided by a window: undivided, ACC001 reports it. Twins: both terms
multiplied by the same name (`w * a + w * b`, which may be 1/k written out), or the mix divided by
k afterwards: silent. Forms: a script, a trainer class, and the mix returned by a helper in another
module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
def train(model, optimizer, loader, args):
    w = args.fluency_weight
    for step, batch in enumerate(loader):
        fluency, label = model(batch)
        loss = LOSS
        loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, args):
        self.model = model
        self.optimizer = optimizer
        self.args = args

    def train(self, loader):
        w = self.args.fluency_weight
        for step, batch in enumerate(loader):
            fluency, label = self.model(batch)
            loss = LOSS
            loss.backward()
            if (step + 1) % self.args.gradient_accumulation_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

CONVEX = ["w * fluency + (1 - w) * label", "fluency * w + label * (1 - w)"]
SILENT = ["w * fluency + w * label", "(w * fluency + (1 - w) * label) / args.gradient_accumulation_steps"]


def _acc001(source: str) -> list[int]:
    return [v.location.row for v in findings_of(source.encode(), "ACC001", path="train.py")]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("loss", CONVEX)
def test_convex_mix_is_undivided(template: str, loss: str) -> None:
    assert len(_acc001(textwrap.dedent(template).replace("LOSS", loss))) == 1


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("loss", SILENT)
def test_one_factor_or_divided_mix_is_silent(template: str, loss: str) -> None:
    if template is TRAINER:
        loss = loss.replace("args.", "self.args.")
    assert _acc001(textwrap.dedent(template).replace("LOSS", loss)) == []


@pytest.mark.parametrize("mix,found", [(CONVEX[0], 1), (SILENT[0], 0)])
def test_mix_returned_by_a_helper_in_another_module(tmp_path: Path, mix: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "losses.py").write_text(f"def mixed(fluency, label, w):\n    return {mix}\n")
    source = textwrap.dedent(SCRIPT).replace("LOSS", "mixed(fluency, label, w)")
    train = tmp_path / "train.py"
    train.write_text("from losses import mixed\n" + source)
    assert len(findings_of(train.read_bytes(), "ACC001", path=str(train))) == found
