"""ACC010 stays silent where one setting chooses between the hand division and the DeepSpeed
engine's backward: `if not args.deepspeed: loss /= k` and, in the same function or in a backward
helper it calls, `if args.deepspeed: model.backward(loss)`. The two never run together, so the loss
is divided once on either path. Script (a function and its helper) and trainer-class forms; the
twins divide whatever the setting, or on the same setting as the engine's backward, and are reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings, row

SCRIPT = """
import deepspeed


def backward_step(optimizer, model, lm_loss, args):
    loss = lm_loss
    if args.deepspeed:
        model.backward(loss)
    else:
        loss.backward()


def train(model, optimizer, loader, args):
    model, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, args=args)
    for batch in loader:
        lm_loss = model(batch)
{division}
        backward_step(optimizer, model, lm_loss, args)
        if args.deepspeed:
            model.step()
        else:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import deepspeed


class Trainer:
    def __init__(self, model, optimizer, args):
        self.args = args
        self.engine, self.optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, args=args)

    def train(self, loader):
        for batch in loader:
            loss = self.engine(batch)
    {division}
            if self.args.use_deepspeed:
                self.engine.backward(loss)
                self.engine.step()
            else:
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

CHOSEN_APART = {
    SCRIPT: "        if not args.deepspeed:\n            lm_loss /= args.gradient_accumulation_steps",
    TRAINER: "        if not self.args.use_deepspeed:\n                loss = loss / self.args.gradient_accumulation_steps",
}
ALWAYS = {
    SCRIPT: "        lm_loss /= args.gradient_accumulation_steps",
    TRAINER: "        loss = loss / self.args.gradient_accumulation_steps",
}
SAME_SETTING = {
    SCRIPT: "        if args.deepspeed:\n            lm_loss /= args.gradient_accumulation_steps",
    TRAINER: "        if self.args.use_deepspeed is not None:\n                loss = loss / self.args.gradient_accumulation_steps",
}


def _acc010(template: str, division: str) -> list[tuple[str, int]]:
    source = template.replace("{division}", division)
    return [f for f in findings(source) if f[0] == "ACC010"]


def _backward_row(template: str, division: str) -> int:
    text = "model.backward(loss)" if template is SCRIPT else "self.engine.backward(loss)"
    return row(template.replace("{division}", division), text)


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_division_on_the_other_setting_than_the_engine_backward_is_clean(template):
    assert _acc010(template, CHOSEN_APART[template]) == []


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_division_whatever_the_setting_is_reported(template):
    division = ALWAYS[template]
    assert _acc010(template, division) == [("ACC010", _backward_row(template, division))]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_division_on_the_same_setting_as_the_engine_backward_is_reported(template):
    division = SAME_SETTING[template]
    assert _acc010(template, division) == [("ACC010", _backward_row(template, division))]


def test_settings_read_through_negation_and_none_tests():
    """`if self.engine is None:` divides and `if self.engine is not None:` runs the engine's backward."""
    source = textwrap.dedent(TRAINER).replace("if self.args.use_deepspeed:", "if self.args.ds_engine is not None:")
    division = "        if self.args.ds_engine is None:\n                loss = loss / self.args.gradient_accumulation_steps"
    assert _acc010(source, division) == []
