"""`logits, loss = model.f(x) if not hasattr(model, "module") else model.module.f(x)`: the loss
comes from one of two calls. ACC001 reads each (undivided when either is), and for a DDP model
handed to the loop ACC009 stays silent, since the wrapper's own forward never runs there (a call
through `.module` or of a method the wrapper lacks); the twin that calls `model(x)` is reported.
Forms: a script function handed the model, a trainer method."""

from __future__ import annotations

from tests.snippets import findings_of

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel


def train_one_epoch(model, optimizer, loader, cfg):
    num_iter = 0
    for data, target in loader:
        num_iter += 1
        FORWARD
        loss.backward()
        if num_iter == cfg.step_per_update:
            optimizer.step()
            optimizer.zero_grad()
            num_iter = 0


def main(cfg, model, optimizer, loader):
    model = DistributedDataParallel(model)
    for epoch in range(cfg.epochs):
        train_one_epoch(model, optimizer, loader, cfg)
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, loader, accum_steps):
        self.model, self.optimizer, self.loader, self.accum_steps = model, optimizer, loader, accum_steps

    def train(self):
        for i, batch in enumerate(self.loader):
            out, loss = self.model.step(batch) if not hasattr(self.model, "module") else self.model.module.step(batch)
            LOSS.backward()
            if (i + 1) % self.accum_steps == 0 or i + 1 == len(self.loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

THROUGH_MODULE = (
    'logits, loss = model.get_logits_loss(data, target) if not hasattr(model, "module") '
    "else model.module.get_logits_loss(data, target)"
)


def _codes(source: str) -> list[str]:
    return sorted(v.code for v in findings_of(source, path="train.py", dedent=True))


# ACC005 in both: `num_iter` starts at 0 in each epoch's call, so each epoch's last batches are left over.
def test_forward_through_module_in_a_handed_loop() -> None:
    assert _codes(SCRIPT.replace("FORWARD", THROUGH_MODULE)) == ["ACC001", "ACC005"]


def test_wrapper_called_itself_in_a_handed_loop() -> None:
    assert _codes(SCRIPT.replace("FORWARD", "loss = model(data, target)")) == ["ACC001", "ACC005", "ACC009"]


def test_loss_unpacked_from_a_choice_of_calls_in_a_trainer() -> None:
    assert _codes(TRAINER.replace("LOSS", "loss")) == ["ACC001"]
    assert _codes(TRAINER.replace("LOSS", "(loss / self.accum_steps)")) == []
