"""ColossalAI Gemini's optimizer (`ZeroOptimizer`, `GeminiAdamOptimizer`) writes each backward's
gradients over the last ones: nothing adds up across micro-steps, so an undivided loss (ACC001)
and a missing `zero_grad` (ACC014) are no bugs there. The same loop on an optimizer of the same
name from elsewhere still adds gradients up and is reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

GEMINI = "from colossalai.zero import ZeroOptimizer"
GEMINI_ADAM = "from colossalai.nn.optimizer.gemini_optimizer import GeminiAdamOptimizer as ZeroOptimizer"
ELSEWHERE = "from mylib.optim import ZeroOptimizer"

SCRIPT = """
    import torch
    {imports}

    optimizer = ZeroOptimizer(torch.optim.Adam(model.parameters()), model)
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        optimizer.backward(loss)
        if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(loader):
            optimizer.step()
"""

TRAINER = """
    import torch
    {imports}


    class Trainer:
        def __init__(self, model, accum):
            self.model = model
            self.accum = accum
            self.optimizer = ZeroOptimizer(torch.optim.Adam(model.parameters()), model)

        def fit(self, loader):
            for step, batch in enumerate(loader):
                loss = self.model(batch).mean()
                self.optimizer.backward(loss)
                if (step + 1) % self.accum == 0 or step + 1 == len(loader):
                    self.optimizer.step()
"""

# Multi-module: the loss comes from the project's own module; the loop and optimizer live here.
MAIN = """
    import torch
    {imports}
    from losses import compute_loss


    def train(model, loader, accum):
        optimizer = ZeroOptimizer(torch.optim.Adam(model.parameters()), model)
        for step, batch in enumerate(loader):
            loss = compute_loss(model, batch)
            optimizer.backward(loss)
            if (step + 1) % accum == 0 or step + 1 == len(loader):
                optimizer.step()
"""

LOSSES = """
    import torch.nn.functional as F


    def compute_loss(model, batch):
        return F.cross_entropy(model(batch["x"]), batch["y"])
"""


def _codes(tmp_path: Path, text: str, extra: dict[str, str] | None = None) -> set[str]:
    (tmp_path / "pyproject.toml").write_text("")
    for name, body in (extra or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(body).lstrip())
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text).lstrip())
    return {f.code for f in findings_of(path.read_bytes(), path=str(path))}


CASES = [(GEMINI, set()), (GEMINI_ADAM, set()), (ELSEWHERE, {"ACC001", "ACC014"})]


@pytest.mark.parametrize(("imports", "expected"), CASES)
def test_script(tmp_path, imports, expected):
    assert _codes(tmp_path, SCRIPT.format(imports=imports)) == expected


@pytest.mark.parametrize(("imports", "expected"), CASES)
def test_trainer(tmp_path, imports, expected):
    assert _codes(tmp_path, TRAINER.format(imports=imports)) == expected


@pytest.mark.parametrize(("imports", "expected"), CASES)
def test_loss_from_another_module(tmp_path, imports, expected):
    assert _codes(tmp_path, MAIN.format(imports=imports), {"losses.py": LOSSES}) == expected
