"""A window gate held in a flag set to constants: `update = True`, then `if k > 1:` / `if i == 0:
update = False` / `elif i % k == 0 or i == len(loader) - 1: update = True` / `else: update =
False`, and the step under `if update:`. Every True, once k is above 1, sits under the window
test, so the loop accumulates over k: an undivided loss is ACC001. A DDP model whose methods the
loop reaches only through `.module` (`self.model.module.train_step(batch)` when distributed) never
runs DDP's forward: no ACC009 for it. Twins: a flag also set True outside the window test (no
window, no finding), and the wrapper called itself (reported).
Forms: a trainer method and a script function."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

TRAINER = """
import torch


class Trainer:
    def __init__(self, args, model, optim, loader):
        self.args, self.optim, self.loader = args, optim, loader
        self.model = torch.nn.parallel.DistributedDataParallel(model)

    def train(self):
        for step_i, batch in enumerate(self.loader):
            if self.args.distributed:
                results = FORWARD
            else:
                results = self.model.train_step(batch)
            loss = results["loss"]
            loss.backward()
            update = True
            if self.args.gradient_accumulation_steps > 1:
                if step_i == 0:
                    update = False
                elif step_i % self.args.gradient_accumulation_steps == 0 or step_i == len(self.loader) - 1:
                    update = True
                else:
                    update = LAST
            if update:
                self.optim.step()
                for param in self.model.parameters():
                    param.grad = None
"""

SCRIPT = """
def train(model, optimizer, loader, k):
    for i, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        step_now = True
        if k > 1:
            if (i + 1) % k == 0:
                step_now = True
            else:
                step_now = LAST
        if step_now:
            optimizer.step()
            optimizer.zero_grad()
"""


def _codes(source: str, **parts: str) -> list[str]:
    text = textwrap.dedent(source)
    for key, value in parts.items():
        text = text.replace(key, value)
    return sorted(f.code for f in findings_of(text.encode(), path="train.py", select=("ACC001", "ACC009")))


def test_trainer_flag_gate_and_forward_past_the_wrapper():
    assert _codes(TRAINER, FORWARD="self.model.module.train_step(batch)", LAST="False") == ["ACC001"]
    assert _codes(TRAINER, FORWARD="self.model(batch)", LAST="False") == ["ACC001", "ACC009"]
    assert _codes(TRAINER, FORWARD="self.model.module.train_step(batch)", LAST="True") == []


def test_script_flag_gate():
    assert _codes(SCRIPT, LAST="False") == ["ACC001"]
    assert _codes(SCRIPT, LAST="True") == []
