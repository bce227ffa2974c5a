"""ACC015: gradients clipped on every micro-step while the step is gated to once per window, with
no GradScaler. Script (a setting that turns the clip on, as in Swin-style `train_one_epoch`),
trainer-class (the clip in a helper method called every micro-step) and multi-module (the helper
in another module) forms, with clean twins: the clip in the step block, a clip that only measures
the norm, a GradScaler loop (ACC004's), another optimizer stepping every micro-step, a logging
gate, a skipped micro-batch."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of
from snippets import findings, row

SCRIPT = """
import torch

def train_one_epoch(model, criterion, data_loader, optimizer, config):
    optimizer.zero_grad()
    for idx, (samples, targets) in enumerate(data_loader):
        loss = criterion(model(samples), targets) / config.TRAIN.ACCUMULATION_STEPS
        loss.backward()
        if config.TRAIN.CLIP_GRAD:
            grad_norm = {clip}
        if (idx + 1) % config.TRAIN.ACCUMULATION_STEPS == 0 or idx + 1 == len(data_loader):
            {in_block}
            optimizer.step()
            optimizer.zero_grad()
"""

CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), config.TRAIN.CLIP_GRAD)"

TRAINER = """
import torch

class Trainer:
    def __init__(self, model, optimizer, loader, accum_steps, max_norm):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader
        self.accum_steps = accum_steps
        self.max_norm = max_norm

    def _clip(self):
        return torch.nn.utils.clip_grad_norm_(self.model.parameters(), {limit})

    def train_epoch(self):
        for step, batch in enumerate(self.loader):
            loss = self.model(batch).mean() / self.accum_steps
            loss.backward()
            {every}
            if (step + 1) % self.accum_steps == 0 or step + 1 == len(self.loader):
                {in_block}
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _script(clip: str = CLIP, in_block: str = "pass") -> str:
    return textwrap.dedent(SCRIPT).replace("{clip}", clip).replace("{in_block}", in_block)


def _trainer(every: str = "self._clip()", in_block: str = "pass", limit: str = "self.max_norm") -> str:
    return textwrap.dedent(TRAINER).replace("{every}", every).replace("{in_block}", in_block).replace("{limit}", limit)


def _acc015(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC015"]


def test_clip_before_the_gate_in_a_script():
    source = _script()
    assert _acc015(source) == [row(source, "grad_norm = torch.nn.utils.clip_grad_norm_")]


def test_clip_value_after_the_gate_still_runs_every_micro_step():
    source = _script().replace(
        "            optimizer.zero_grad()\n",
        "            optimizer.zero_grad()\n        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)\n",
    )
    assert _acc015(source) == [
        row(source, "grad_norm = torch.nn.utils.clip_grad_norm_"),
        row(source, "clip_grad_value_"),
    ]


def test_one_clip_per_branch_is_one_finding():
    """`if amp: clip(amp.master_params(opt)) else: clip(model.parameters())`: one bug written twice."""
    branches = (
        "torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0) if config.AMP_OPT_LEVEL "
        "else torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
    )
    assert _acc015(_script(clip=branches)) == [row(_script(clip=branches), "grad_norm = ")]
    source = _script().replace(
        "        if config.TRAIN.CLIP_GRAD:\n            grad_norm = ",
        "        if config.AMP_OPT_LEVEL:\n"
        "            torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)\n"
        "        elif config.TRAIN.CLIP_GRAD:\n            grad_norm = ",
    )
    assert _acc015(source) == [row(source, "amp.master_params(optimizer), 1.0)")]
    # two clips that both run stay two findings
    both = _script().replace(
        "        if config.TRAIN.CLIP_GRAD:\n",
        "        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)\n        if config.TRAIN.CLIP_GRAD:\n",
    )
    assert len(_acc015(both)) == 2


def test_clip_in_the_step_block_is_clean():
    source = _script(clip="None", in_block=CLIP)
    assert _acc015(source) == []
    assert findings(source) == []


def test_a_norm_measured_every_micro_step_is_clean():
    for limit in ('float("inf")', "math.inf", "1e9", "max_norm=torch.inf"):
        clip = f"torch.nn.utils.clip_grad_norm_(model.parameters(), {limit})"
        assert _acc015(_script(clip=clip)) == [], limit


def test_a_grad_scaler_loop_is_left_to_acc004():
    source = _script().replace("loss.backward()", "scaler.scale(loss).backward()").replace(
        "optimizer.step()", "scaler.step(optimizer)\n            scaler.update()"
    ).replace("def train_one_epoch(model,", "scaler = torch.cuda.amp.GradScaler()\n\ndef train_one_epoch(model,")
    found = findings(source)
    assert [code for code, _ in found if code in {"ACC004", "ACC015"}] == ["ACC004"]


def test_an_optimizer_stepping_every_micro_step_may_own_the_clip():
    source = _script().replace(
        "        loss.backward()\n",
        "        loss.backward()\n        critic_optimizer.step()\n        critic_optimizer.zero_grad()\n",
    ).replace("optimizer, config):", "optimizer, critic_optimizer, config):")
    assert _acc015(source) == []


def test_a_logging_gate_is_not_a_window():
    source = _script().replace("(idx + 1) % config.TRAIN.ACCUMULATION_STEPS == 0 or idx + 1 == len(data_loader)",
                               "idx % config.log_interval == 0")
    assert _acc015(source) == []


def test_a_clip_on_a_skipped_micro_batch_is_clean():
    source = _script().replace(
        "        if config.TRAIN.CLIP_GRAD:\n            grad_norm = " + CLIP + "\n",
        f"        if not torch.isfinite(loss):\n            {CLIP}\n            optimizer.zero_grad()\n            continue\n",
    )
    assert CLIP in source and "grad_norm =" not in source
    assert _acc015(source) == []


def test_without_accumulation_a_clip_before_the_step_is_clean():
    source = """
        import torch

        def train(model, loader, optimizer):
            for x, y in loader:
                loss = model(x, y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
    """
    assert _acc015(source) == []


def test_clip_helper_method_called_every_micro_step():
    source = _trainer()
    assert _acc015(source) == [row(source, "            self._clip()")]


def test_clip_helper_method_called_in_the_step_block_is_clean():
    source = _trainer(every="pass", in_block="self._clip()")
    assert _acc015(source) == []


def test_measuring_helper_method_is_clean():
    source = _trainer(limit='float("inf")')
    assert _acc015(source) == []


def test_clip_helper_of_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "grads.py").write_text(textwrap.dedent("""
        import torch

        def clip_gradients(model, max_norm):
            if max_norm > 0:
                return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            return None
    """).lstrip())
    trainer = "from grads import clip_gradients\n" + _trainer(every="clip_gradients(self.model, self.max_norm)")
    path = tmp_path / "trainer.py"
    path.write_text(trainer)
    found = findings_of(path.read_bytes(), path=str(path), select=("ACC015",))
    assert [f.location.row for f in found] == [row(trainer, "clip_gradients(self.model, self.max_norm)")]
    assert "`clip_gradients()` clips gradients on every micro-step" in found[0].message

    clean = "from grads import clip_gradients\n" + _trainer(every="pass", in_block="clip_gradients(self.model, self.max_norm)")
    path.write_text(clean)
    assert findings_of(path.read_bytes(), path=str(path), select=("ACC015",)) == []
