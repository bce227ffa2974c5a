"""`if k > 1:` accumulate (clip every micro-step, step under `% k`) `else:` step every batch: the
ungated step belongs to the k == 1 mode, not to another optimizer updating each micro-step, so the
clip in the accumulating branch is still ACC015's. Twins: the clip moved into the step block
(clean), and a second optimizer stepping every micro-step on the same path (the GAN case: silent).
Forms: a script loop and a trainer method."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, optimizer, loader, k, clip):
    for idx, (x, y) in enumerate(loader):
        loss = model(x, y)
        if k > 1:
            loss = loss / k
            loss.backward()
            CLIP_EACH
            if (idx + 1) % k == 0 or idx + 1 == len(loader):
                CLIP_IN_BLOCK
                optimizer.step()
                optimizer.zero_grad()
        else:
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
"""

CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), clip)"


def _acc015(source: str) -> list[int]:
    return [v.location.row for v in findings_of(source, "ACC015", path="train.py", dedent=True)]


def test_clip_every_micro_step_in_the_accumulating_mode_is_reported() -> None:
    assert _acc015(SCRIPT.replace("CLIP_EACH", CLIP).replace("CLIP_IN_BLOCK", "pass")) == [11]


def test_clip_in_the_step_block_is_clean() -> None:
    assert _acc015(SCRIPT.replace("CLIP_EACH", "pass").replace("CLIP_IN_BLOCK", CLIP)) == []


def test_another_optimizer_stepping_every_micro_step_keeps_it_silent() -> None:
    source = SCRIPT.replace("CLIP_EACH", CLIP + "\n            disc_optimizer.step()").replace("CLIP_IN_BLOCK", "pass")
    assert _acc015(source.replace("def train(model,", "def train(disc_optimizer, model,")) == []


def test_trainer_method() -> None:
    loop = SCRIPT.replace("CLIP_EACH", CLIP).replace("CLIP_IN_BLOCK", "pass")
    header, function = loop.split("\n\n\n", 1)
    source = header + "\n\n\nclass Trainer:\n" + textwrap.indent(function.replace("(model,", "(self, model,"), "    ")
    assert _acc015(source) == [12]
