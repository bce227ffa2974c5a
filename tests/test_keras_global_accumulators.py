"""Keras/TensorFlow accumulators made at module level, added to in a `train_step` function (often
a `tf.function`) and applied in the loop that calls it: the collection is one, read as a global by
the function. Its sum applied undivided is ACC001; never set back to zero, ACC014. The twins divide
the loss, reset in another function, or bind the name locally (a different collection)."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of


def _found(text: str) -> list[tuple[str, int]]:
    found = findings_of(textwrap.dedent(text).lstrip("\n"), path="case.py")
    return sorted((f.code, f.location.row) for f in found if f.code in {"ACC001", "ACC014"})


HEAD = """
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam()
k = 4
accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y)){divided}
    grads = tape.gradient(loss, model.trainable_variables)
    for a, g in zip(accum, grads):
        a.assign_add(g)
    return loss

{extra}
for step, (x, y) in enumerate(dataset):
    train_step(x, y)
    if (step + 1) % k == 0:
        optimizer.apply_gradients(zip(accum, model.trainable_variables))
{after}"""

RESET = "        for a in accum:\n            a.assign(tf.zeros_like(a))\n"
RESET_FUNCTION = "def reset():\n    for a in accum:\n        a.assign(tf.zeros_like(a))\n\n"


def _case(divided: str = "", extra: str = "", after: str = "") -> str:
    return HEAD.format(divided=divided, extra=extra, after=after)


def test_a_global_collection_summed_and_never_reset():
    apply_row = 22
    assert _found(_case()) == [("ACC001", apply_row), ("ACC014", apply_row)]


def test_reset_after_the_apply_leaves_the_undivided_sum():
    assert _found(_case(after=RESET)) == [("ACC001", 22)]


def test_divided_loss_and_a_reset_function_are_clean():
    assert _found(_case(divided=" / k", extra=RESET_FUNCTION, after="        reset()\n")) == []


def test_a_collection_bound_inside_the_function_is_another_one():
    local = _case().replace("    grads = tape.gradient", "    accum = []\n    grads = tape.gradient")
    assert _found(local) == []
