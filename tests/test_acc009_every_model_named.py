"""ACC009's advice names every DDP model the accumulating loop runs forward with gradients: in a
GAN's generator loop the discriminator's forward runs with gradients too, and it all-reduces as
well, so wrapping the generator alone would leave it syncing on every micro-step. A loop that
runs one DDP model names that one alone. Forms: a script and a trainer class."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
from torch.nn.parallel import DistributedDataParallel as DDP


def train_generator(G, D, g_opt, loader, k, rank):
    G = DDP(G, device_ids=[rank])
    D = DDP(D, device_ids=[rank])
    for i, z in enumerate(loader):
        loss = LOSS / k
        loss.backward()
        if (i + 1) % k == 0:
            g_opt.step()
            g_opt.zero_grad()
"""

TRAINER = """
from torch.nn.parallel import DistributedDataParallel as DDP


class GanTrainer:
    def __init__(self, G, D, g_opt, rank, grad_accum_every):
        self.G = DDP(G, device_ids=[rank])
        self.D = DDP(D, device_ids=[rank])
        self.g_opt = g_opt
        self.grad_accum_every = grad_accum_every

    def train_generator_step(self, batches):
        for z in batches:
            loss = LOSS / self.grad_accum_every
            loss.backward()
        self.g_opt.step()
        self.g_opt.zero_grad()
"""


def _names(message: str, models: tuple[str, ...]) -> bool:
    """Every model is named: one in the advice, the others after it."""
    return all(f"`{m}.no_sync()`" in message or f"`{m}`" in message.split("the same for", 1)[-1] for m in models)


def _messages(source: str) -> list[str]:
    return [f.message for f in findings_of(textwrap.dedent(source).lstrip(), "ACC009", path="train.py")]


def test_script_generator_loop_names_the_discriminator_too() -> None:
    [message] = _messages(SCRIPT.replace("LOSS", "-D(G(z)).mean()"))
    assert "the same for" in message and _names(message, ("G", "D"))
    [alone] = _messages(SCRIPT.replace("LOSS", "G(z).pow(2).mean()"))
    assert "the same for" not in alone


def test_trainer_generator_loop_names_the_discriminator_too() -> None:
    [message] = _messages(TRAINER.replace("LOSS", "-self.D(self.G(z)).mean()"))
    assert "the same for" in message and _names(message, ("self.G", "self.D"))
    [alone] = _messages(TRAINER.replace("LOSS", "self.G(z).pow(2).mean()"))
    assert "the same for" not in alone
