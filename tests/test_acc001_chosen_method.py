"""A loss function chosen by a conditional expression and called through a local name
(`forward = self.model.forward if dpo else self.model.forward_old`, then `loss, acc = forward(...)`)
is read through every function it may hold: when each returns a sum over the samples, summing k
micro-batches is the big batch's gradient and ACC001 is silent; when one returns a mean, it is
reported. Forms: a Lightning-style step method over a model class in the same module, and a script
function over two module functions."""

from __future__ import annotations

from tests.snippets import findings_of

MODEL = """
import torch
import torch.nn.functional as F


class Decoder(torch.nn.Module):
    def forward(self, x, y):
        logits = self.head(x)
        return F.cross_entropy(logits, y, reduction="sum"), logits

    def forward_old(self, x, y):
        logits = self.head(x)
        return F.cross_entropy(logits, y, reduction=REDUCTION), logits


class Module:
    def __init__(self, config):
        self.model = Decoder()
        self.config = config

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        forward = self.model.forward if self.config["dpo"] else self.model.forward_old
        loss, acc = forward(batch["x"], batch["y"])
        self.manual_backward(loss)
        if (batch_idx + 1) % 4 == 0 or self.trainer.is_last_batch:
            opt.step()
            opt.zero_grad()
"""

SCRIPT = """
import torch.nn.functional as F


def summed(model, x, y):
    return F.cross_entropy(model(x), y, reduction="sum")


def other(model, x, y):
    return F.cross_entropy(model(x), y, reduction=REDUCTION)


def train(model, optimizer, loader, accum_steps, use_other):
    for i, (x, y) in enumerate(loader):
        compute = other if use_other else summed
        loss = compute(model, x, y)
        loss.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""


def _acc001(source: str) -> int:
    return len(findings_of(source, "ACC001", path="train.py", dedent=True))


def test_method_chosen_by_a_setting_with_summed_losses_is_clean() -> None:
    assert _acc001(MODEL.replace("REDUCTION", '"sum"')) == 0


def test_method_chosen_by_a_setting_with_a_mean_loss_is_reported() -> None:
    assert _acc001(MODEL.replace("REDUCTION", '"mean"')) == 1


def test_function_chosen_by_a_setting_in_a_script() -> None:
    assert _acc001(SCRIPT.replace("REDUCTION", '"sum"')) == 0
    assert _acc001(SCRIPT.replace("REDUCTION", '"mean"')) == 1
