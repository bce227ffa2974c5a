"""A scaled backward, a clip, then a call of a step method that steps the GradScaler
(`self.optimizer_step()` running `self.scaler.step(self.optim)`): the clip sees scaled gradients,
as if the step were written in the loop. Twins: `unscale_` before the clip (clean), a step method
that steps the optimizer without a scaler (clean), a plain backward (clean).
Forms: a trainer method calling another method, a script calling a module function."""

from __future__ import annotations

from tests.snippets import findings_of

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optim, loader):
        self.model, self.optim, self.loader = model, optim, loader
        self.scaler = torch.cuda.amp.GradScaler()

    def optimizer_step(self):
        STEP
        self.optim.zero_grad()

    def train(self):
        for batch in self.loader:
            with torch.autocast("cuda"):
                loss = self.model(batch)
            BACKWARD
            UNSCALE
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer_step()
"""

SCRIPT = """
import torch


def apply_update(scaler, optim):
    scaler.step(optim)
    scaler.update()
    optim.zero_grad()


def train(model, optim, loader):
    scaler = torch.cuda.amp.GradScaler()
    for batch in loader:
        with torch.autocast("cuda"):
            loss = model(batch)
        scaler.scale(loss).backward()
        UNSCALE
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        apply_update(scaler, optim)
"""


def _acc004(source: str) -> list[int]:
    return [v.location.row for v in findings_of(source, "ACC004", path="train.py", dedent=True)]


def _trainer(step: str, backward: str, unscale: str) -> str:
    return TRAINER.replace("STEP", step).replace("BACKWARD", backward).replace("UNSCALE", unscale)


SCALED_STEP = "self.scaler.step(self.optim); self.scaler.update()"
SCALED_BACKWARD = "self.scaler.scale(loss).backward()"


def test_clip_before_a_method_that_steps_the_scaler_is_reported() -> None:
    assert _acc004(_trainer(SCALED_STEP, SCALED_BACKWARD, "pass")) == [20]


def test_unscale_before_the_clip_is_clean() -> None:
    assert _acc004(_trainer(SCALED_STEP, SCALED_BACKWARD, "self.scaler.unscale_(self.optim)")) == []


def test_method_that_steps_without_a_scaler_is_clean() -> None:
    assert _acc004(_trainer("self.optim.step()", "loss.backward()", "pass")) == []


def test_plain_backward_is_clean() -> None:
    assert _acc004(_trainer(SCALED_STEP, "loss.backward()", "pass")) == []


def test_script_calling_a_module_function_is_reported() -> None:
    assert _acc004(SCRIPT.replace("UNSCALE", "pass")) == [18]
    assert _acc004(SCRIPT.replace("UNSCALE", "scaler.unscale_(optim)")) == []
