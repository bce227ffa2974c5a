"""Keras and TensorFlow (issue 10): seed 004's code and the accumulation shapes of tf.keras and
Keras 3, under the shared codes; TensorFlow and Keras are never imported."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from accumlint.engine import check_source, fix_source


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def found(text: str, filename: str = "case.py") -> list[tuple[str, int]]:
    result = check_source(text, filename)
    assert result.error is None, result.error
    return sorted((f.code, f.location.row) for f in result.findings)


def marked(text: str) -> list[tuple[str, int]]:
    """Rows marked `# <ACCnnn` with their codes."""
    rows = []
    for row, line in enumerate(text.splitlines(), 1):
        if "# <ACC" in line:
            rows.append((line.split("# <", 1)[1][:6], row))
    return sorted(rows)


def assert_marked(text: str) -> None:
    assert found(text) == marked(text), (found(text), marked(text))


# --- seed 004 ---------------------------------------------------------------------------------
# The seed's patch class (its first variant, with tf.cond), its patching helper, its train_step
# and the mixed-precision setup that hands the LossScaleOptimizer to the helper.
SEED_COMMON = '''
import logging

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import mixed_precision

logger = logging.getLogger(__name__)


def get_patched_optimizer(optimizer, n, trainable_variables):
    accumulator = _GradientAccumulationPatch(
        n=n,
        orig_apply_gradients=optimizer.apply_gradients,
        trainable_variables=trainable_variables,
    )
    # Replace the original function
    optimizer.apply_gradients = accumulator.apply_gradients
    return optimizer


def build_optimizer(model, precision_policy, grad_acc_n):
    optimizer = keras.optimizers.Adam(1e-3)
    if precision_policy.name.startswith("mixed"):
        logger.info(f'Using LossScaleOptimizer (policy: "{precision_policy.name})"')
        optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
    if grad_acc_n > 1:
        # --> This patched the LossScaleOptimizer which caused the problem:
        optimizer = get_patched_optimizer(optimizer=optimizer, n=grad_acc_n, trainable_variables=model.trainable_variables)  # <ACC011
    return optimizer


class SpeechModel(keras.Model):
    def train_step(self, data):
        (inputs, (input_lengths, label_lengths), mask), y_true = data
        loss, gradients = self.rnnt_gradient(
            inputs=inputs, y_true=y_true, input_lengths=input_lengths, label_lengths=label_lengths, mask=mask
        )
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        return {"loss": loss}

    def rnnt_gradient(self, inputs, y_true, input_lengths, label_lengths, mask=None):
        with tf.GradientTape() as tape:
            model_loss = self.rnnt_loss_wrapper(
                inputs, y_true=y_true, input_lengths=input_lengths, label_lengths=label_lengths, mask=mask
            )
            is_mixed_precision = isinstance(self.optimizer, mixed_precision.LossScaleOptimizer)
            # We always want to return the unmodified model_loss for Tensorboard
            if is_mixed_precision:
                loss = self.optimizer.get_scaled_loss(model_loss)
            else:
                loss = model_loss
            gradients = tape.gradient(loss, self.trainable_variables)
            if is_mixed_precision:
                gradients = self.optimizer.get_unscaled_gradients(gradients)
            return model_loss, gradients

    def rnnt_loss_wrapper(self, inputs, y_true, input_lengths, label_lengths, mask=None):
        logits = self(inputs, training=True)
        return tf.reduce_mean(tf.nn.ctc_loss(y_true, logits, label_lengths, input_lengths, logits_time_major=False))
'''

SEED_COND = SEED_COMMON + '''

class _GradientAccumulationPatch:
    def __init__(self, n: int, orig_apply_gradients, trainable_variables):
        self.n = tf.constant(n, dtype=tf.int64)
        policy = tf.keras.mixed_precision.global_policy()
        self.variable_dtype = policy.variable_dtype
        self.accu_gradients = [tf.Variable(tf.zeros(g.shape, dtype=g.dtype)) for g in trainable_variables]
        self._current_step = tf.Variable(0, dtype=tf.int64)
        self._orig_apply_gradients = orig_apply_gradients

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        trainable_variables = [var for (_, var) in grads_and_vars]
        gradients = [grad for (grad, _) in grads_and_vars]
        # Always accumulate gradients
        for i, grad in enumerate(gradients):
            self.accu_gradients[i].assign_add(grad)
        tf.cond(
            self._can_apply_on_next_step(),
            true_fn=lambda: self.apply_accu_gradients(trainable_variables, args, kwargs),
            false_fn=lambda: None,
        )

    def apply_accu_gradients(self, trainable_variables, *args, **kwargs):
        # Call the original apply_gradients() function
        self._orig_apply_gradients(zip(self.accu_gradients, trainable_variables), *args, **kwargs)  # <ACC001
        # Reset all accumulated gradients to zero
        for i in range(len(self.accu_gradients)):
            self.accu_gradients[i].assign(tf.zeros_like(trainable_variables[i]))

    def _can_apply_on_next_step(self):
        # Increment (always do this first)
        self._current_step.assign_add(1)
        count_mod_steps = tf.math.mod(self._current_step, self.n)
        return tf.equal(count_mod_steps, 0)
'''

SEED_MASK = SEED_COMMON + '''

class _GradientAccumulationPatch:
    def __init__(self, n: int, orig_apply_gradients, trainable_variables):
        self.n = tf.constant(n, dtype=tf.int64)
        policy = tf.keras.mixed_precision.global_policy()
        self.variable_dtype = policy.variable_dtype
        self.accu_gradients = [tf.Variable(tf.zeros(g.shape, dtype=g.dtype)) for g in trainable_variables]
        self._current_step = tf.Variable(0, dtype=tf.int64)
        self._orig_apply_gradients = orig_apply_gradients

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        can_apply = self._can_apply_on_next_step()
        # 1.0 whenever we want to apply gradients; 0.0 otherwise
        apply = tf.cast(can_apply, dtype=self.variable_dtype)
        # Will be 0.0 if apply is 1.0 and vice versa
        keep = tf.cast(tf.logical_not(can_apply), dtype=self.variable_dtype)

        grads_and_vars = list(grads_and_vars)
        gradients = [grad for (grad, _) in grads_and_vars]
        trainable_variables = [var for (_, var) in grads_and_vars]

        # Accumulate gradients
        for i, grad in enumerate(gradients):
            self.accu_gradients[i].assign_add(grad)

        # Multiply each gradient with our apply-signal
        final_gradients = [grad * apply for grad in self.accu_gradients]

        self._orig_apply_gradients(zip(final_gradients, trainable_variables), *args, **kwargs)  # <ACC001

        # This will reset our buffer whenever "keep" is 0.0
        for g in self.accu_gradients:
            g.assign(g * keep)

    def _can_apply_on_next_step(self):
        self._current_step.assign_add(1)
        count_mod_steps = tf.math.mod(self._current_step, self.n)
        return tf.equal(count_mod_steps, 0)
'''


def test_seed_tf_cond_variant():
    assert_marked(src(SEED_COND))


def test_seed_mask_variant():
    assert_marked(src(SEED_MASK))


def test_seed_sum_fix_divides_the_applied_accumulators():
    text = src(SEED_COND)
    result = fix_source(text, "seed.py")
    assert result.error is None, result.error
    assert result.fixed_source is not None
    assert (
        "self._orig_apply_gradients(zip([g / tf.cast(self.n, g.dtype) for g in self.accu_gradients], "
        "trainable_variables), *args, **kwargs)" in result.fixed_source
    )
    assert [f.code for f in result.findings] == ["ACC011"]  # report only: it stays


def test_seed_mask_fix_divides_what_is_applied():
    result = fix_source(src(SEED_MASK), "seed.py")
    assert result.error is None, result.error
    assert result.fixed_source is not None
    assert (
        "self._orig_apply_gradients(zip([acc_grad / tf.cast(self.n, acc_grad.dtype) for acc_grad in final_gradients], "
        "trainable_variables), *args, **kwargs)" in result.fixed_source
    )


def test_seed_float32_path_alone_is_clean_of_acc011():
    """Without the LossScaleOptimizer branch the patch lands on the optimizer itself."""
    text = src(SEED_COND).replace(
        '        optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)\n', '        pass\n'
    )
    assert [code for code, _ in found(text)] == ["ACC001"]


def test_seed_across_modules(tmp_path: Path):
    """The seed's main script calls `grad_acc.get_patched_optimizer(...)` of another module."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'speech'\n")
    helper = src(SEED_COND).split("def build_optimizer", 1)[0]
    helper += src(SEED_COND).split("class _GradientAccumulationPatch", 1)[1].join(["class _GradientAccumulationPatch", ""])
    (tmp_path / "grad_acc.py").write_text(helper)
    main = src('''
        from tensorflow import keras

        import grad_acc


        def build_optimizer(model, precision_policy, grad_acc_n):
            optimizer = keras.optimizers.Adam(1e-3)
            if precision_policy.name.startswith("mixed"):
                optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
            if grad_acc_n > 1:
                optimizer = grad_acc.get_patched_optimizer(optimizer=optimizer, n=grad_acc_n, trainable_variables=model.trainable_variables)
            return optimizer
    ''')
    path = tmp_path / "train.py"
    path.write_text(main)
    result = engine.check_source(path.read_bytes(), str(path))
    assert result.error is None, result.error
    assert [(f.code, f.location.row) for f in result.findings if f.filename == str(path)] == [("ACC011", 11)]
