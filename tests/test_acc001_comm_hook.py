"""ACC001 stays silent in a module that registers a DDP communication hook of its own
(`model.register_comm_hook(None, scale_by_k(allreduce_hook))`): the hook runs on the gradients as
they are reduced and may divide them by the accumulation steps, out of sight of the loop. torch's
built-in hooks (`allreduce_hook`, `fp16_compress_hook`, ...) only reduce or compress, so with one
of them, or none, the undivided loss is still reported. Forms: a script and a trainer class."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook, fp16_compress_hook


def scaled(hook, k):
    def scaled_hook(state, bucket):
        bucket.set_buffer(bucket.buffer().div_(k))
        return hook(state, bucket)
    return scaled_hook


def train(model, loader, optimizer, k):
    model = DDP(model)
    REGISTER
    for i, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook


class Trainer:
    def __init__(self, model, loader, accumulation_steps):
        self.model = DistributedDataParallel(model)
        self.loader = loader
        self.k = accumulation_steps
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        REGISTER

    def _divide_and_reduce(self, state, bucket):
        bucket.set_buffer(bucket.buffer().div_(self.k))
        return allreduce_hook(state, bucket)

    def fit(self):
        for i, (x, y) in enumerate(self.loader):
            loss = (self.model(x) - y).pow(2).mean()
            loss.backward()
            if (i + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _acc001(source: str) -> list:
    return findings_of(source.encode(), "ACC001", path="train.py")


@pytest.mark.parametrize("register,reported", [
    ("model.register_comm_hook(None, scaled(allreduce_hook, k))", 0),
    ("model.register_comm_hook(state=None, hook=scaled(allreduce_hook, k))", 0),
    ("model.register_comm_hook(None, allreduce_hook)", 1),
    ("model.register_comm_hook(None, fp16_compress_hook)", 1),
    ("pass", 1),
])
def test_script(register: str, reported: int) -> None:
    source = textwrap.dedent(SCRIPT).replace("REGISTER", register)
    assert len(_acc001(source)) == reported


@pytest.mark.parametrize("register,reported", [
    ("self.model.register_comm_hook(None, self._divide_and_reduce)", 0),
    ("self.model.register_comm_hook(None, allreduce_hook)", 1),
])
def test_trainer(register: str, reported: int) -> None:
    source = textwrap.dedent(TRAINER).replace("REGISTER", register)
    assert len(_acc001(source)) == reported
