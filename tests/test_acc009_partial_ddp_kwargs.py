"""ACC009 under Accelerate where the module shows a DDP launch by building its
`DistributedDataParallelKwargs` through `functools.partial` (a default handed to a helper that
finds or makes the handler): the prepared model all-reduces on every micro-step of a loop that
accumulates without `no_sync`/`accumulate`. The twins build another kwargs handler the same way
(`InitProcessGroupKwargs`), which shows no DDP, and stay silent.
Forms: a script, and a trainer whose `train_step` runs the whole window per call."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
from functools import partial

from accelerate import Accelerator, DistributedDataParallelKwargs, InitProcessGroupKwargs


def find_or_make(handlers, make):
    found = [h for h in handlers if isinstance(h, DistributedDataParallelKwargs)]
    return found[0] if found else make()


def main(model, optimizer, loader, k, handlers):
    handler = find_or_make(handlers, partial(HANDLER, find_unused_parameters=True))
    accelerator = Accelerator(kwargs_handlers=[handler])
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        loss = model(batch) / k
        accelerator.backward(loss)
        if (step + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
from functools import partial

from accelerate import Accelerator, DistributedDataParallelKwargs, InitProcessGroupKwargs


class Trainer:
    def __init__(self, model, optimizer, loader, grad_accum_every, accelerate_kwargs):
        handlers = accelerate_kwargs.get("kwargs_handlers", [])
        handlers.append(partial(HANDLER, find_unused_parameters=True)())
        self.accelerator = Accelerator(kwargs_handlers=handlers)
        self.model, self.optim, self.loader = self.accelerator.prepare(model, optimizer, loader)
        self.grad_accum_every = grad_accum_every
        self.dl_iter = iter(self.loader)

    def train_step(self):
        for _ in range(self.grad_accum_every):
            batch = next(self.dl_iter)
            loss = self.model(batch)
            self.accelerator.backward(loss / self.grad_accum_every)
        self.optim.step()
        self.optim.zero_grad()

    def train(self, steps):
        for _ in range(steps):
            self.train_step()
"""


def _acc009(source: str, handler: str) -> int:
    text = textwrap.dedent(source).replace("HANDLER", handler)
    return len(findings_of(text.encode(), path="train.py", select=("ACC009",)))


def test_script_with_partial_ddp_kwargs():
    assert _acc009(SCRIPT, "DistributedDataParallelKwargs") == 1
    assert _acc009(SCRIPT, "InitProcessGroupKwargs") == 0


def test_trainer_with_partial_ddp_kwargs():
    assert _acc009(TRAINER, "DistributedDataParallelKwargs") == 1
    assert _acc009(TRAINER, "InitProcessGroupKwargs") == 0
