"""ACC005 where the window counts the micro-steps since the last step (`if ni - last_opt_step >=
self.accumulate:` with `last_opt_step = ni` in the step block, the mark set before the epochs) and
the step runs in the trainer's own method (`self.optimizer_step()`, which unscales, clips, steps
the scaler and zeroes `self.optimizer`), as Ultralytics' trainer does: the zeroing of the same
optimizer at the start of each epoch wipes the micro-batches backwarded since the last step.
Reported at the zeroing. Setting the mark anew in each epoch, or zeroing another optimizer, is clean."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, loader, args):
        self.model, self.train_loader, self.args = model, loader, args
        self.optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
        self.scaler = torch.cuda.amp.GradScaler()
        self.accumulate = max(round(args.nbs / args.batch_size), 1)

    def _do_train(self):
        nb = len(self.train_loader)
        last_opt_step = -1
        for epoch in range(self.args.epochs):
            self.model.train()
            RESET
            ZERO
            for i, batch in enumerate(self.train_loader):
                ni = i + nb * epoch
                with torch.cuda.amp.autocast():
                    loss, loss_items = self.model(batch)
                self.scaler.scale(loss).backward()
                if ni - last_opt_step >= self.accumulate:
                    self.optimizer_step()
                    last_opt_step = ni

    def optimizer_step(self):
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=10.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad()
"""


def _source(zero: str, reset: str = "pass") -> str:
    return TRAINER.replace("ZERO", zero).replace("RESET", reset)


def test_zeroing_the_stepped_optimizer_each_epoch_is_reported() -> None:
    source = _source("self.optimizer.zero_grad()")
    [finding] = findings_of(source, "ACC005")
    assert finding.location.row == next(i for i, line in enumerate(source.splitlines(), 1) if line.strip() == "self.optimizer.zero_grad()")
    assert "wipes the gradients backwarded since that step" in finding.message


@pytest.mark.parametrize("zero, reset", [
    ("self.optimizer.zero_grad()", "last_opt_step = nb * epoch - 1"),  # the mark starts anew each epoch
    ("self.other_optimizer.zero_grad()", "pass"),  # not the optimizer the window steps
])
def test_clean_twins(zero: str, reset: str) -> None:
    assert findings_of(_source(zero, reset), "ACC005") == []
