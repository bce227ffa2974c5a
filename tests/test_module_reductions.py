"""A module's reduction is the tensor's method: `torch.mean(x)` scales like `x.mean()`, and
`keras.ops.mean(x) / k` is a division of the loss like `x.mean() / k`."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

TORCH_LOOP = """
    import torch

    for i, (x, y) in enumerate(loader):
        loss = {loss}
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
"""

KERAS3_TRAIN_STEP = """
    import keras
    from keras import ops

    K = 4


    class Net(keras.Model):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                pred = self(x, training=True)
                loss = {loss}
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {{"loss": loss}}


    model = Net()
    model.compile(optimizer=keras.optimizers.Adam(1e-3, gradient_accumulation_steps=K))
"""


def codes(template: str, loss: str) -> list[tuple[str, int]]:
    """The loss-scaling findings (the loop's missing end clause, ACC005, is beside the point)."""
    found = findings_of(textwrap.dedent(template.format(loss=loss)).lstrip("\n"), path="case.py")
    return [(f.code, f.location.row) for f in found if f.code in {"ACC001", "ACC010"}]


@pytest.mark.parametrize("loss", [
    "torch.mean(criterion(model(x), y))",
    "torch.sum(criterion(model(x), y))",
    "torch.squeeze(model(x).loss)",
])
def test_undivided_loss_through_a_torch_reduction(loss):
    assert ("ACC001", 5) in codes(TORCH_LOOP, loss)


@pytest.mark.parametrize("loss", [
    "torch.mean(criterion(model(x), y) / accum)",
    "torch.mean(criterion(model(x), y)) / accum",
])
def test_divided_loss_through_a_torch_reduction(loss):
    assert codes(TORCH_LOOP, loss) == []


def test_keras3_ops_mean_divided_by_k_with_an_accumulating_optimizer():
    assert ("ACC010", 13) in codes(KERAS3_TRAIN_STEP, "ops.mean(ops.square(pred - y)) / K")
    assert codes(KERAS3_TRAIN_STEP, "ops.mean(ops.square(pred - y))") == []
