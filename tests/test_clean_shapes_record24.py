"""Correct code the heldout24 record read, in general form, that must stay clean: an Accelerate
trainer that divides the loss by hand and enters `no_sync` for the non-final micro-steps through a
`partial` chosen by a conditional, beside `autocast()` (its twin without the context is reported);
parameters from `named_parameters()` sorted into optimizer groups; and a loss helper that adds up
its terms in a local total and returns it."""

from __future__ import annotations

from tests.snippets import codes

ACCELERATE = """
from contextlib import nullcontext
from functools import partial

from accelerate import Accelerator, DistributedDataParallelKwargs


class Trainer:
    def __init__(self, model, optim, dl, grad_accum_every):
        self.accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
        self.model, self.optim, self.dl = self.accelerator.prepare(model, optim, dl)
        self.dl_iter = iter(self.dl)
        self.grad_accum_every = grad_accum_every

    def train_step(self):
        for i in range(self.grad_accum_every):
            is_last = i == self.grad_accum_every - 1
            context = partial(self.accelerator.no_sync, self.model) if not is_last else nullcontext
            batch = next(self.dl_iter)
            with self.accelerator.autocast(), CONTEXT:
                loss = self.model(batch)
                self.accelerator.backward(loss / self.grad_accum_every)
        self.optim.step()
        self.optim.zero_grad()
"""

PARAM_GROUPS = """
import torch
from torch import nn


def build_optimizer(model, lr):
    pg0, pg1, pg2 = [], [], []
    for k, v in model.named_parameters():
        if ".bias" in k:
            pg2.append(v)
        elif ".weight" in k and ".bn" not in k:
            pg1.append(v)
        else:
            pg0.append(v)
    optimizer = torch.optim.SGD(pg0, lr=lr, momentum=0.9)
    optimizer.add_param_group({"params": pg1, "weight_decay": 5e-4})
    optimizer.add_param_group({"params": pg2})
    return optimizer


def train(model, loader, lr):
    optimizer = build_optimizer(model, lr)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""

LOSS_HELPER = """
import torch


def generator_loss(disc_outputs):
    loss = 0
    gen_losses = []
    for dg in disc_outputs:
        term = torch.mean((1 - dg) ** 2)
        gen_losses.append(term)
        loss += term
    return loss, gen_losses


def train(generator, discriminator, optimizer, loader):
    for x in loader:
        loss, parts = generator_loss(discriminator(generator(x)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_manual_accumulation_with_no_sync_through_a_partial() -> None:
    assert "ACC009" not in codes(ACCELERATE.replace("CONTEXT", "context()"), "trainer.py")
    unsynced = ACCELERATE.replace("CONTEXT", "nullcontext()").replace(
        "            context = partial(self.accelerator.no_sync, self.model) if not is_last else nullcontext\n", ""
    )
    assert "no_sync" not in unsynced
    assert "ACC009" in codes(unsynced, "trainer.py")


def test_parameters_sorted_into_optimizer_groups() -> None:
    assert codes(PARAM_GROUPS, "train.py") == []


def test_loss_terms_added_up_in_a_returned_local() -> None:
    assert codes(LOSS_HELPER, "train.py") == []
