"""ACC012: the loop tests the micro-step counter against the accumulation steps
(`if step % grad_accum == 0:`) but holds only the clipping or the logging in that block; the
optimizer step runs on every micro-step outside it, so nothing accumulates (the tutorial bug
thunlp/OpenPrompt#106). Twins: the step inside the block, a gate on another modulus, no gate."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from tests.snippets import findings, row

SCRIPT = """
import torch


def train(model, loader, optimizer, scheduler, grad_accum, log_every):
    step = 0
    for epoch in range(3):
        for batch in loader:
            loss = model(batch)
            loss.backward()
            step += 1
            if step % {modulus} == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                {inside}
            {outside}
"""

STEP = "optimizer.step()\n{pad}scheduler.step()\n{pad}optimizer.zero_grad()"

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, cfg):
        self.model = model
        self.optimizer = optimizer
        self.accum_steps = cfg.accum_steps

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch)
            loss.backward()
            if (i + 1) % self.accum_steps == 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""




def _script(modulus: str, inside: str = "pass", outside: str = "pass") -> str:
    return SCRIPT.format(modulus=modulus, inside=inside, outside=outside)


def test_a_step_outside_the_accumulation_block_is_reported_at_the_step():
    source = _script("grad_accum", outside=STEP.format(pad=" " * 12))
    result = engine.check_source(textwrap.dedent(source).lstrip(), "train.py")
    [finding] = result.findings
    assert (finding.code, finding.location.row) == ("ACC012", row(source, "optimizer.step()"))
    assert "outside `if step % grad_accum == 0:`" in finding.message


def test_the_step_inside_the_accumulation_block_is_clean_of_acc012():
    source = _script("grad_accum", inside=STEP.format(pad=" " * 16))
    assert all(code != "ACC012" for code, _ in findings(source))


def test_a_block_on_a_logging_modulus_gives_no_such_evidence():
    source = _script("log_every", outside=STEP.format(pad=" " * 12))
    assert findings(source) == []


def test_no_block_at_all_gives_no_evidence():
    source = _script("1", outside=STEP.format(pad=" " * 12)).replace("            if step % 1 == 0:\n", "            if True:\n")
    assert findings(source) == []


def test_a_trainer_method_stepping_outside_its_block_is_reported():
    assert findings(TRAINER) == [("ACC012", row(TRAINER, "self.optimizer.step()"))]


def test_a_trainer_method_stepping_inside_its_block_is_clean():
    source = TRAINER.replace(
        "            self.optimizer.step()\n            self.optimizer.zero_grad()",
        "                self.optimizer.step()\n                self.optimizer.zero_grad()",
    )
    assert all(code != "ACC012" for code, _ in findings(source))


def test_the_accumulation_steps_from_another_module(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "config.py").write_text("GRAD_ACCUM = 4\n")
    source = _script("GRAD_ACCUM", outside=STEP.format(pad=" " * 12)).replace(
        "import torch\n", "import torch\nfrom config import GRAD_ACCUM\n", 1
    )
    (tmp_path / "train.py").write_text(textwrap.dedent(source).lstrip())
    monkeypatch.chdir(tmp_path)
    assert findings((tmp_path / "train.py").read_text(), "train.py") == [("ACC012", row(source, "optimizer.step()"))]
