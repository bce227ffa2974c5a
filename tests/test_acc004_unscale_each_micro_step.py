"""`scaler.unscale_(opt); clip_grad_norm_(...)` after every backward while the scaler's step runs once
per window: a GradScaler allows one `unscale_` per optimizer between updates, so the second
micro-step raises, and each clip rescales a partial sum. ACC004 reports the clip (report only: the
pair has to move into the step block). The clip on the plain branch of the same `if amp:` runs every
micro-step too, without a scaler: that one is ACC015's. Twins: unscale and clip inside the step block
(silent), and a loop that steps on every batch (no window, silent).
Forms: a trainer method with the window held in a flag, a script with a `%` gate, a step function
in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of

CLIP_EACH_MICRO_STEP = """
            if self.args.clip > 0:
                if self.args.fp16:
                    self.scaler.unscale_(self.optim)
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip)
                else:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip)
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, args, model, optim, loader):
        self.args, self.model, self.optim, self.loader = args, model, optim, loader
        self.scaler = torch.cuda.amp.GradScaler()

    def train(self):
        for step_i, batch in enumerate(self.loader):
            with torch.autocast("cuda", enabled=self.args.fp16):
                loss = self.model(batch) / self.args.gradient_accumulation_steps
            if self.args.fp16:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
BEFORE
            update = True
            if self.args.gradient_accumulation_steps > 1:
                if step_i == 0:
                    update = False
                elif step_i % self.args.gradient_accumulation_steps == 0 or step_i == len(self.loader) - 1:
                    update = True
                else:
                    update = False
            if update:
INSIDE
                if self.args.fp16:
                    self.scaler.step(self.optim)
                    self.scaler.update()
                else:
                    self.optim.step()
                self.optim.zero_grad()
"""

SCRIPT = """
import torch


def train(args, model, optim, loader):
    scaler = torch.cuda.amp.GradScaler()
    for i, batch in enumerate(loader):
        with torch.autocast("cuda"):
            loss = model(batch) / args.accum_steps
        scaler.scale(loss).backward()
        scaler.unscale_(optim)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if GATE:
            scaler.step(optim)
            scaler.update()
            optim.zero_grad()
"""


def _trainer(before: str, inside: str) -> str:
    source = TRAINER.replace("BEFORE\n", before).replace("INSIDE\n", inside)
    return textwrap.dedent(source)


def _findings(source: str, code: str, path: str = "train.py") -> list:
    return findings_of(source, code, path=path)


def _codes(source: str, code: str) -> list[int]:
    return sorted(v.location.row for v in _findings(source, code))


def test_unscale_and_clip_every_micro_step_in_a_trainer_is_reported() -> None:
    source = _trainer(CLIP_EACH_MICRO_STEP, "")
    findings = _findings(source, "ACC004")
    assert [v.location.row for v in findings] == [22]
    assert "second `unscale_()`" in findings[0].message
    assert findings[0].fix is None
    assert _codes(source, "ACC015") == [24]  # the plain branch clips every micro-step without a scaler


def test_unscale_and_clip_in_the_step_block_are_clean() -> None:
    inside = textwrap.indent(CLIP_EACH_MICRO_STEP, " " * 4)
    source = _trainer("", inside)
    assert _codes(source, "ACC004") == []
    assert _codes(source, "ACC015") == []


def test_script_with_a_modulo_gate_is_reported() -> None:
    source = textwrap.dedent(SCRIPT.replace("GATE", "(i + 1) % args.accum_steps == 0 or i + 1 == len(loader)"))
    assert _codes(source, "ACC004") == [12]
    assert _codes(source, "ACC015") == []  # one finding: the scaled clip is ACC004's


def test_script_that_steps_every_batch_is_clean() -> None:
    source = textwrap.dedent(SCRIPT.replace("GATE", "True"))
    assert _codes(source, "ACC004") == []


def test_step_function_in_another_module_is_read_through_the_call(tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(
        textwrap.dedent(
            """
            def apply_update(scaler, optim):
                scaler.step(optim)
                scaler.update()
                optim.zero_grad()
            """
        )
    )
    loop = SCRIPT.replace("import torch\n", "import torch\nfrom steps import apply_update\n")
    loop = loop.replace(
        "            scaler.step(optim)\n            scaler.update()\n            optim.zero_grad()\n",
        "            apply_update(scaler, optim)\n",
    )
    (tmp_path / ".git").mkdir()
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(loop.replace("GATE", "(i + 1) % args.accum_steps == 0 or i + 1 == len(loader)")))
    assert [v.location.row for v in _findings(train.read_text(), "ACC004", str(train))] == [13]
