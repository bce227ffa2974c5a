"""ACC009's backward-only `no_sync` finding stays silent when the same micro-step's forward already
ran under `model.no_sync()` earlier in the iteration (`if step % k == 0: out = model(x)` / `else:
with model.no_sync(): out = model(x)`, then the same split again around the backward): entering it
twice is redundant, not a backward-only switch. The twin runs the forward outside and is reported.
Forms: a script loop and a trainer method."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
import torch


def train(args, model, optimizer, loader):
    model = torch.nn.parallel.DistributedDataParallel(model)
    for step, batch in enumerate(loader):
        FORWARD
        loss = outputs[0] / args.gradient_accumulation_steps
        if step % args.gradient_accumulation_steps == 0:
            loss.backward()
        else:
            with model.no_sync():
                loss.backward()
        if step % args.gradient_accumulation_steps == 0:
            optimizer.step()
            model.zero_grad()
"""
BOTH = """if step % args.gradient_accumulation_steps == 0:
            outputs = model(**batch)
        else:
            with model.no_sync():
                outputs = model(**batch)"""
OUTSIDE = "outputs = model(**batch)"

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, optimizer, k):
        self.model = torch.nn.parallel.DistributedDataParallel(model)
        self.optimizer, self.k = optimizer, k

    def train(self, loader):
        for step, batch in enumerate(loader):
            last = (step + 1) % self.k == 0
            FORWARD
            if last:
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
            else:
                with self.model.no_sync():
                    loss.backward()
"""
TRAINER_BOTH = """if last:
                loss = self.model(batch).mean() / self.k
            else:
                with self.model.no_sync():
                    loss = self.model(batch).mean() / self.k"""
TRAINER_OUTSIDE = "loss = self.model(batch).mean() / self.k"


def _acc009(source: str, forward: str) -> int:
    text = textwrap.dedent(source).replace("FORWARD", forward)
    return len(findings_of(text.encode(), path="train.py", select=("ACC009",)))


def test_script_forward_already_without_sync():
    assert _acc009(SCRIPT, BOTH) == 0
    assert _acc009(SCRIPT, OUTSIDE) == 1


def test_trainer_forward_already_without_sync():
    assert _acc009(TRAINER, TRAINER_BOTH) == 0
    assert _acc009(TRAINER, TRAINER_OUTSIDE) == 1
