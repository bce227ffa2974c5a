"""Keras and TensorFlow (issue 10): seed 004's code and the accumulation shapes of tf.keras and
Keras 3, under the shared codes; TensorFlow and Keras are never imported."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint.engine import check_source, fix_source
from tests.snippets import findings_of


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def found(text: str, filename: str = "case.py") -> list[tuple[str, int]]:
    return sorted((f.code, f.location.row) for f in findings_of(text, path=filename))


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
    in_train = [(f.code, f.location.row) for f in findings_of(path.read_bytes(), path=str(path)) if f.filename == str(path)]
    assert in_train == [("ACC011", 11)]


# --- ACC001: accumulated gradients applied as their sum ---------------------------------------------
TRAIN_STEP_COND_SUM = '''
import tensorflow as tf


class CustomTrainStep(tf.keras.Model):
    def __init__(self, n_gradients, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.n_gradients = tf.constant(n_gradients, dtype=tf.int32)
        self.n_acum_step = tf.Variable(0, dtype=tf.int32, trainable=False)
        self.gradient_accumulation = [
            tf.Variable(tf.zeros_like(v, dtype=tf.float32), trainable=False) for v in self.trainable_variables
        ]

    def train_step(self, data):
        self.n_acum_step.assign_add(1)
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        gradients = tape.gradient(loss, self.trainable_variables)
        for i in range(len(self.gradient_accumulation)):
            self.gradient_accumulation[i].assign_add(gradients[i])
        tf.cond(tf.equal(self.n_acum_step, self.n_gradients), self.apply_accu_gradients, lambda: None)
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}

    def apply_accu_gradients(self):
        self.optimizer.apply_gradients(zip(self.gradient_accumulation, self.trainable_variables))  # <ACC001
        self.n_acum_step.assign(0)
        for i in range(len(self.gradient_accumulation)):
            self.gradient_accumulation[i].assign(tf.zeros_like(self.trainable_variables[i], dtype=tf.float32))
'''

CUSTOM_LOOP_SUM = '''
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, 16))
optimizer = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.MeanSquaredError()
dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal((96, 16)), tf.random.normal((96, 1)))).batch(8).repeat()
accum_steps = 4
accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]

for step, (x, y) in enumerate(dataset.take(400)):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    for acc, g in zip(accum, grads):
        acc.assign_add(g)
    if (step + 1) % accum_steps == 0:
        optimizer.apply_gradients(zip(accum, model.trainable_variables))  # <ACC001
        for acc in accum:
            acc.assign(tf.zeros_like(acc))
'''

WRAPPER_CLASS_SUM = '''
import tensorflow as tf


class AccumOptimizer:
    """Wraps an optimizer; applies every `steps` calls."""

    def __init__(self, optimizer, variables, steps):
        self.optimizer = optimizer
        self.steps = steps
        self.calls = 0
        self.grads = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]

    def apply_gradients(self, grads_and_vars):
        grads_and_vars = list(grads_and_vars)
        for acc, (grad, _) in zip(self.grads, grads_and_vars):
            acc.assign_add(grad)
        self.calls += 1
        if self.calls % self.steps == 0:
            self.optimizer.apply_gradients(zip(self.grads, [v for _, v in grads_and_vars]))  # <ACC001
            for acc in self.grads:
                acc.assign(tf.zeros_like(acc))


model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, 16))
optimizer = AccumOptimizer(tf.keras.optimizers.SGD(0.1), model.trainable_variables, 4)
for x, y in tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 16)), tf.random.normal((64, 1)))).batch(8):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
'''

KERAS3_TRAIN_STEP_SUM = '''
import keras
import tensorflow as tf
from keras import ops


class AccumModel(keras.Model):
    def __init__(self, steps, **kwargs):
        super().__init__(**kwargs)
        self.steps = steps
        self.dense = keras.layers.Dense(1)
        self.dense.build((None, 16))
        self.count = keras.Variable(0, trainable=False)
        self.sums = [keras.Variable(ops.zeros_like(v), trainable=False) for v in self.dense.trainable_variables]

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        for total, grad in zip(self.sums, grads):
            total.assign_add(grad)
        self.count.assign_add(1)
        if self.count % self.steps == 0:
            self.optimizer.apply(self.sums, self.trainable_variables)  # <ACC001
            for total in self.sums:
                total.assign(ops.zeros_like(total))
        return {"loss": loss}
'''

SUM_CASES = {
    "train_step_tf_cond": TRAIN_STEP_COND_SUM,
    "custom_loop": CUSTOM_LOOP_SUM,
    "wrapper_class": WRAPPER_CLASS_SUM,
    "keras3_train_step": KERAS3_TRAIN_STEP_SUM,
}


import pytest  # noqa: E402


@pytest.mark.parametrize("name", sorted(SUM_CASES))
def test_acc001_accumulated_sum(name):
    assert_marked(src(SUM_CASES[name]))


@pytest.mark.parametrize("name", sorted(SUM_CASES))
def test_acc001_fix_makes_it_clean(name):
    text = src(SUM_CASES[name])
    result = fix_source(text, "case.py")
    assert result.error is None, result.error
    assert result.fixed_source is not None, "no fix offered"
    assert "tf.cast(" in result.fixed_source
    assert found(result.fixed_source) == []


def _divided(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new).replace("  # <ACC001", "")


@pytest.mark.parametrize("text", [
    # divided in the accumulation
    _divided(src(TRAIN_STEP_COND_SUM), "assign_add(gradients[i])", "assign_add(gradients[i] / tf.cast(self.n_gradients, tf.float32))"),
    _divided(src(CUSTOM_LOOP_SUM), "acc.assign_add(g)", "acc.assign_add(g / accum_steps)"),
    # divided where it is applied
    _divided(src(CUSTOM_LOOP_SUM), "zip(accum, model", "zip([a / accum_steps for a in accum], model"),
    _divided(src(WRAPPER_CLASS_SUM), "zip(self.grads, [", "zip([g / self.steps for g in self.grads], ["),
    # the loss divided before tape.gradient
    _divided(src(CUSTOM_LOOP_SUM), "model(x, training=True))\n", "model(x, training=True)) / accum_steps\n"),
    _divided(src(KERAS3_TRAIN_STEP_SUM), "training=True))\n", "training=True)) / self.steps\n"),
], ids=["cond-add", "loop-add", "loop-apply", "wrapper-apply", "loop-loss", "keras3-loss"])
def test_acc001_divided_somewhere_is_clean(text):
    assert found(text) == []


def test_acc001_unknown_factor_stays_silent():
    """A factor the analysis cannot read (a learning-rate scale, a clip) is no verdict."""
    text = _divided(src(CUSTOM_LOOP_SUM), "zip(accum, model", "zip([a * scale for a in accum], model")
    assert found(text) == []


def test_acc001_helper_gradients_of_unknown_origin_stay_silent():
    """An accumulator fed by a method whose callers are not in sight is no verdict."""
    text = src('''
        import tensorflow as tf


        class GradientAccumulator:
            def __init__(self, variables):
                self.step = tf.Variable(0, trainable=False)
                self.gradients = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]

            def __call__(self, gradients):
                for accumulator, gradient in zip(self.gradients, gradients):
                    accumulator.assign_add(gradient)
                self.step.assign_add(1)

            def apply(self, optimizer, variables):
                optimizer.apply_gradients(zip(self.gradients, variables))
                for accumulator in self.gradients:
                    accumulator.assign(tf.zeros_like(accumulator))
    ''')
    assert found(text) == []


# --- ACC005: a `% k` gate over a finite dataset, no flush --------------------------------------------
LOOP_PARTIAL = '''
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, 16))
optimizer = tf.keras.optimizers.SGD(0.1)
dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal((100, 16)), tf.random.normal((100, 1)))).batch(8)
k = 4
accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]

for epoch in range(3):
    for step, (x, y) in enumerate(dataset):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y)) / k
        grads = tape.gradient(loss, model.trainable_variables)
        for a, g in zip(accum, grads):
            a.assign_add(g)
        if (step + 1) % k == 0:  # <ACC005
            optimizer.apply_gradients(zip(accum, model.trainable_variables))
            for a in accum:
                a.assign(tf.zeros_like(a))
'''


def test_acc005_custom_loop():
    findings = check_source(src(LOOP_PARTIAL), "case.py").findings
    assert [(f.code, f.location.row) for f in findings] == marked(src(LOOP_PARTIAL))
    assert findings[0].fix is None  # a tf.data dataset may have no len(): report only
    # The message names the step as the code writes it, not PyTorch's optimizer.step().
    assert "never reach `optimizer.apply_gradients()`" in findings[0].message


@pytest.mark.parametrize("old,new", [
    (").batch(8)\n", ").batch(8).repeat()\n"),  # endless
    ("enumerate(dataset)", "enumerate(dataset.take(400))"),  # an epoch of a step count
    ("if (step + 1) % k == 0:", "if (step + 1) % k == 0 or step + 1 == n_batches:"),  # end clause
], ids=["repeat", "take", "end-clause"])
def test_acc005_near_misses(old, new):
    text = src(LOOP_PARTIAL).replace("  # <ACC005", "")
    assert old in text
    assert found(text.replace(old, new)) == []


def test_acc005_flushed_after_the_loop():
    text = src(LOOP_PARTIAL).replace("  # <ACC005", "") + (
        "    optimizer.apply_gradients(zip(accum, model.trainable_variables))\n"
        "    for a in accum:\n"
        "        a.assign(tf.zeros_like(a))\n"
    )
    assert found(text) == []


# --- ACC007: accumulators reset inside the window -----------------------------------------------------
LOOP_RESET_EVERY_STEP = '''
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, 16))
optimizer = tf.keras.optimizers.SGD(0.1)
dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal((96, 16)), tf.random.normal((96, 1)))).batch(8)
k = 4
accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]

for step, (x, y) in enumerate(dataset):
    for a in accum:  # <ACC007
        a.assign(tf.zeros_like(a))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y)) / k
    grads = tape.gradient(loss, model.trainable_variables)
    for a, g in zip(accum, grads):
        a.assign_add(g)
    if (step + 1) % k == 0 or step + 1 == 12:
        optimizer.apply_gradients(zip(accum, model.trainable_variables))
'''

TRAIN_STEP_RESET_EVERY_STEP = '''
import tensorflow as tf


class AccumModel(tf.keras.Model):
    def __init__(self, k, **kwargs):
        super().__init__(**kwargs)
        self.k = k
        self.dense = tf.keras.layers.Dense(1)
        self.dense.build((None, 16))
        self.count = tf.Variable(0, trainable=False)
        self.sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.dense.trainable_variables]

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        for i in range(len(self.sums)):  # <ACC007
            self.sums[i].assign(tf.zeros_like(self.sums[i]))
        with tf.GradientTape() as tape:
            loss = self.compiled_loss(y, self(x, training=True)) / self.k
        grads = tape.gradient(loss, self.trainable_variables)
        for i, grad in enumerate(grads):
            self.sums[i].assign_add(grad)
        self.count.assign_add(1)
        if self.count % self.k == 0:
            self.optimizer.apply_gradients(zip(self.sums, self.trainable_variables))
        return {"loss": loss}
'''


@pytest.mark.parametrize("text", [LOOP_RESET_EVERY_STEP, TRAIN_STEP_RESET_EVERY_STEP], ids=["loop", "train_step"])
def test_acc007_reset_inside_the_window(text):
    assert_marked(src(text))


@pytest.mark.parametrize("text", [LOOP_RESET_EVERY_STEP, TRAIN_STEP_RESET_EVERY_STEP], ids=["loop", "train_step"])
def test_acc007_fix_moves_the_reset_after_the_apply(text):
    result = fix_source(src(text), "case.py")
    assert result.error is None, result.error
    assert result.fixed_source is not None
    assert found(result.fixed_source) == []
    lines = result.fixed_source.splitlines()
    apply = next(i for i, line in enumerate(lines) if "apply_gradients" in line)
    reset = next(i for i, line in enumerate(lines) if ".assign(tf.zeros_like" in line)
    assert reset == apply + 2  # the `for` over the accumulators, moved whole after the apply


def test_acc007_reset_after_the_apply_is_clean():
    text = src(LOOP_RESET_EVERY_STEP).replace("  # <ACC007", "")
    top = "    for a in accum:\n        a.assign(tf.zeros_like(a))\n"
    assert top in text
    text = text.replace(top, "") + "        for a in accum:\n            a.assign(tf.zeros_like(a))\n"
    assert found(text) == []


# --- ACC010: Keras 3 averages the window by itself (gradient_accumulation_steps) ---------------------
KERAS3_LOOP_DIVIDED = '''
import keras
import tensorflow as tf

accum_steps = 4
model = keras.Sequential([keras.layers.Dense(1)])
model.build((None, 16))
optimizer = keras.optimizers.AdamW(learning_rate=1e-3, gradient_accumulation_steps=accum_steps)
loss_fn = keras.losses.MeanSquaredError()
dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal((96, 16)), tf.random.normal((96, 1)))).batch(8)

for x, y in dataset:
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True)) / accum_steps
    grads = tape.gradient(loss, model.trainable_variables)  # <ACC010
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
'''

KERAS3_TRAIN_STEP_DIVIDED = '''
import keras
import tensorflow as tf

ACCUM_STEPS = 8


class Regressor(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(x=x, y=y, y_pred=self(x, training=True))
            loss = loss / ACCUM_STEPS
        grads = tape.gradient(loss, self.trainable_variables)  # <ACC010
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


model = Regressor()
model.compile(optimizer=keras.optimizers.Adam(1e-3, gradient_accumulation_steps=ACCUM_STEPS), loss="mse")
model.fit(tf.random.normal((128, 16)), tf.random.normal((128, 1)), batch_size=8, epochs=2)
'''

KERAS3_LOSS_FUNCTION_DIVIDED = '''
import keras

GRAD_ACCUM = 4


def scaled_mse(y_true, y_pred):
    return keras.losses.mean_squared_error(y_true, y_pred) / GRAD_ACCUM  # <ACC010


model = keras.Sequential([keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(0.1, gradient_accumulation_steps=GRAD_ACCUM), loss=scaled_mse)
model.fit(keras.random.normal((128, 16)), keras.random.normal((128, 1)), batch_size=8, epochs=2)
'''

DOUBLE_CASES = {
    "custom_loop": KERAS3_LOOP_DIVIDED,
    "train_step": KERAS3_TRAIN_STEP_DIVIDED,
    "loss_function": KERAS3_LOSS_FUNCTION_DIVIDED,
}


@pytest.mark.parametrize("name", sorted(DOUBLE_CASES))
def test_acc010_keras3_divided_by_hand(name):
    assert_marked(src(DOUBLE_CASES[name]))


@pytest.mark.parametrize("name", sorted(DOUBLE_CASES))
def test_acc010_fix_drops_the_hand_division(name):
    text = src(DOUBLE_CASES[name])
    assert fix_source(text, "case.py").fixed_source is None  # unsafe: only on request
    result = fix_source(text, "case.py", unsafe_fixes=True)
    assert result.error is None, result.error
    assert result.fixed_source is not None
    assert found(result.fixed_source) == []


@pytest.mark.parametrize("name", sorted(DOUBLE_CASES))
def test_acc010_without_accumulation_steps_is_not_double(name):
    """The same hand division with an optimizer that does not accumulate is no double scaling."""
    text = src(DOUBLE_CASES[name])
    for keyword in (", gradient_accumulation_steps=accum_steps", ", gradient_accumulation_steps=ACCUM_STEPS",
                    ", gradient_accumulation_steps=GRAD_ACCUM"):
        text = text.replace(keyword, "")
    assert "gradient_accumulation_steps" not in text
    assert "ACC010" not in [code for code, _ in found(text)]


@pytest.mark.parametrize("name", sorted(DOUBLE_CASES))
def test_keras3_accumulation_undivided_is_clean(name):
    """The optimizer averages: the loss left alone is right (and a step every batch is no ACC012)."""
    text = src(DOUBLE_CASES[name]).replace("  # <ACC010", "")
    for division in (" / accum_steps", "            loss = loss / ACCUM_STEPS\n", " / GRAD_ACCUM"):
        text = text.replace(division, "")
    assert found(text) == []


# --- ACC011: accumulation attached to the loss-scale wrapper -----------------------------------------
ACCUMULATOR_CLASS = '''
import tensorflow as tf
from tensorflow import keras


class GradientAccumulator:
    def __init__(self, apply_gradients, variables, k):
        self.inner_apply = apply_gradients
        self.k = k
        self.count = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]

    def apply_gradients(self, grads_and_vars, **kwargs):
        grads_and_vars = list(grads_and_vars)
        for total, (grad, _) in zip(self.sums, grads_and_vars):
            total.assign_add(grad / tf.cast(self.k, grad.dtype))
        self.count.assign_add(1)
        if self.count % self.k == 0:
            self.inner_apply([(total, var) for total, (_, var) in zip(self.sums, grads_and_vars)], **kwargs)
            for total in self.sums:
                total.assign(tf.zeros_like(total))


model = keras.Sequential([keras.layers.Dense(1)])
model.build((None, 16))
'''

DIRECT_PATCH = ACCUMULATOR_CLASS + '''
optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam(1e-3))
accumulator = GradientAccumulator(optimizer.apply_gradients, model.trainable_variables, 4)
optimizer.apply_gradients = accumulator.apply_gradients  # <ACC011
model.compile(optimizer=optimizer, loss="mse")
'''

PATCH_ON_SELF = '''
import tensorflow as tf


class Trainer:
    def __init__(self, model, k):
        self.model = model
        self.k = k
        self.optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1))
        self.original_apply = self.optimizer.apply_gradients
        self.optimizer.apply_gradients = self.accumulate  # <ACC011

    def accumulate(self, grads_and_vars):
        ...
'''

WRAPPED_IN_ACCUMULATION_CLASS = '''
import keras
from my_project.optim import AccumulationOptimizer

inner = keras.optimizers.Adam(1e-3)
optimizer = keras.optimizers.LossScaleOptimizer(inner)
optimizer = AccumulationOptimizer(optimizer, accum_steps=4)  # <ACC011
'''

WRAPPER_CASES = {"direct_patch": DIRECT_PATCH, "patch_on_self": PATCH_ON_SELF, "accumulation_class": WRAPPED_IN_ACCUMULATION_CLASS}


@pytest.mark.parametrize("name", sorted(WRAPPER_CASES))
def test_acc011_reported(name):
    text = src(WRAPPER_CASES[name])
    assert_marked(text)
    result = check_source(text, "case.py")
    ours = [f for f in result.findings if f.code == "ACC011"]
    assert all(f.fix is None for f in ours)
    assert all("gradient_accumulation_steps" in f.message and "train_step" in f.message for f in ours)


def test_acc011_keras3_inner_optimizer_accumulates_then_wrapped():
    text = src('''
        import keras

        inner = keras.optimizers.Adam(1e-3, gradient_accumulation_steps=4)
        optimizer = keras.optimizers.LossScaleOptimizer(inner)
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile(optimizer=optimizer, loss="mse")
        model.fit(keras.random.normal((64, 16)), keras.random.normal((64, 1)), batch_size=8)
    ''')
    assert found(text) == []


def test_acc011_loss_scale_optimizer_without_accumulation():
    text = src('''
        import tensorflow as tf

        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())
        model.compile(optimizer=optimizer, loss="mse")
        model.fit(tf.random.normal((64, 16)), tf.random.normal((64, 1)), batch_size=8, epochs=2)
    ''')
    assert found(text) == []


def test_acc011_patch_on_the_float32_branch_only():
    text = src(ACCUMULATOR_CLASS) + src('''
        optimizer = keras.optimizers.Adam(1e-3)
        if policy.startswith("mixed"):
            optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
        else:
            accumulator = GradientAccumulator(optimizer.apply_gradients, model.trainable_variables, 4)
            optimizer.apply_gradients = accumulator.apply_gradients
    ''')
    assert found(text) == []


def test_acc011_patch_before_wrapping_is_not_this_rule():
    text = src(ACCUMULATOR_CLASS) + src('''
        optimizer = keras.optimizers.Adam(1e-3)
        accumulator = GradientAccumulator(optimizer.apply_gradients, model.trainable_variables, 4)
        optimizer.apply_gradients = accumulator.apply_gradients
        model.compile(optimizer=optimizer, loss="mse")
    ''')
    assert found(text) == []


def test_accumulator_dividing_by_k_is_clean():
    assert found(src(ACCUMULATOR_CLASS)) == []


def test_plain_fit_and_plain_custom_loop_are_clean():
    text = src('''
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.Adam(1e-3)
        dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 16)), tf.random.normal((64, 1)))).batch(8)
        history = []
        state = None
        for epoch in range(2):
            for step, (x, y) in enumerate(dataset):
                with tf.GradientTape() as tape:
                    out, state = model(x, state)
                    loss = tf.reduce_mean(tf.square(out - y))
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                history.append(loss)
                if step % 10 == 0:
                    print(step, float(loss))

        model.compile(optimizer="adam", loss="mse")
        model.fit(dataset, epochs=2)
    ''')
    assert found(text) == []


def test_gan_with_two_tapes_is_clean():
    text = src('''
        import tensorflow as tf

        gen_opt = tf.keras.optimizers.Adam(1e-4)
        disc_opt = tf.keras.optimizers.Adam(1e-4)


        @tf.function
        def train_step(images, generator, discriminator):
            with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
                fake = generator(tf.random.normal((8, 100)), training=True)
                real_out = discriminator(images, training=True)
                fake_out = discriminator(fake, training=True)
                gen_loss = -tf.reduce_mean(fake_out)
                disc_loss = tf.reduce_mean(fake_out) - tf.reduce_mean(real_out)
            gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
            disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
            gen_opt.apply_gradients(zip(gen_grads, generator.trainable_variables))
            disc_opt.apply_gradients(zip(disc_grads, discriminator.trainable_variables))
    ''')
    assert found(text) == []


def test_pytorch_loop_is_unaffected():
    """A torch loop in the same shape: still ACC001 at its backward, with the usual fix."""
    text = src('''
        import torch

        model = torch.nn.Linear(16, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 16), torch.randn(64, 1)), batch_size=8)
        accum_steps = 4
        losses = []
        for i, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()  # <ACC001
            losses.append(loss)  # <ACC002
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    ''')
    assert_marked(text)
    fixed = fix_source(text, "case.py").fixed_source
    assert fixed is not None and "(loss / accum_steps).backward()" in fixed


# --- shapes seen in public Keras/TensorFlow accumulation code (written here in the general pattern) ---
def test_division_whose_result_is_thrown_away_is_no_scaling():
    text = src('''
        import tensorflow as tf


        class AccumStep(tf.keras.Model):
            def __init__(self, k, **kwargs):
                super().__init__(**kwargs)
                self.k = tf.constant(k, dtype=tf.int32)
                self.seen = tf.Variable(0, dtype=tf.int32, trainable=False)
                self.acc = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.trainable_variables]

            def train_step(self, data):
                self.seen.assign_add(1)
                x, y = data
                with tf.GradientTape() as tape:
                    loss = self.compiled_loss(y, self(x, training=True))
                grads = tape.gradient(loss, self.trainable_variables)
                for i in range(len(self.acc)):
                    self.acc[i].assign_add(grads[i])
                tf.cond(tf.equal(self.seen, self.k), self.apply_window, lambda: None)
                return {"loss": loss}

            def apply_window(self):
                for i in range(len(self.acc)):
                    self.acc[i] / tf.cast(self.k, tf.float32)
                self.optimizer.apply_gradients(zip(self.acc, self.trainable_variables))  # <ACC001
                self.seen.assign(0)
                for i in range(len(self.acc)):
                    self.acc[i].assign(tf.zeros_like(self.acc[i]))
    ''')
    assert_marked(text)


def test_masked_apply_every_step_with_a_divided_loss_is_clean():
    """Applying `cast(should_apply) * acc` on every step (a zero update between windows) with the
    loss divided by k: the accumulators keep the window, not a gate on the step (no ACC012)."""
    text = src('''
        import tensorflow as tf


        class MaskedAccum(tf.keras.Model):
            def __init__(self, accum_steps, **kwargs):
                super().__init__(**kwargs)
                self.accum_steps = tf.constant(accum_steps, dtype=tf.int32)
                self.counter = tf.Variable(0, dtype=tf.int32, trainable=False)
                self.acc = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.trainable_variables]

            def train_step(self, data):
                self.counter.assign_add(1)
                x, y = data
                with tf.GradientTape() as tape:
                    loss = self.compiled_loss(y, self(x, training=True))
                    loss = loss / tf.cast(self.accum_steps, tf.float32)
                grads = tape.gradient(loss, self.trainable_variables)
                for i in range(len(self.acc)):
                    self.acc[i].assign_add(grads[i])
                should_apply = tf.equal(self.counter, self.accum_steps)
                masked = [tf.cast(should_apply, g.dtype) * g for g in self.acc]
                self.optimizer.apply_gradients(zip(masked, self.trainable_variables))
                self.counter.assign(self.counter * tf.cast(tf.logical_not(should_apply), tf.int32))
                for i in range(len(self.acc)):
                    self.acc[i].assign_add(-1 * masked[i])
                return {"loss": loss}
    ''')
    assert found(text) == []


def test_accumulators_divided_in_place_before_the_apply_are_clean():
    text = src('''
        import tensorflow as tf


        class Trainer:
            def __init__(self, model, optimizer, update_every):
                self.model = model
                self.optimizer = optimizer
                self.update_every = update_every
                self.count = 0
                self.acc = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]

            def step(self, x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(self.model(x) - y))
                grads = tape.gradient(loss, self.model.trainable_variables)
                for a, g in zip(self.acc, grads):
                    a.assign_add(g)
                self.count += 1
                if self.count % self.update_every == 0:
                    for a in self.acc:
                        a.assign(a / self.count)
                    self.optimizer.apply_gradients(zip(self.acc, self.model.trainable_variables))
                    for a in self.acc:
                        a.assign(tf.zeros_like(a))
                    self.count = 0
    ''')
    assert found(text) == []


def test_loss_divided_by_a_variable_holding_k_is_clean():
    text = src('''
        import tensorflow as tf


        class Seq2Seq(tf.keras.Model):
            def __init__(self, n_gradients, **kwargs):
                super().__init__(**kwargs)
                self.n_gradients = tf.constant(n_gradients, dtype=tf.int32)
                self.n_gradients_float = tf.Variable(float(n_gradients), trainable=False)
                self.step_count = tf.Variable(0, dtype=tf.int32, trainable=False)
                self.acc = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.trainable_variables]

            def train_step(self, data):
                self.step_count.assign_add(1)
                with tf.GradientTape() as tape:
                    loss = self(data, training=True)[0] / self.n_gradients_float
                grads = tape.gradient(loss, self.trainable_variables)
                for i in range(len(self.acc)):
                    self.acc[i].assign_add(grads[i])
                tf.cond(tf.equal(self.step_count, self.n_gradients), self.apply_window, lambda: None)
                return {"loss": loss}

            def apply_window(self):
                self.optimizer.apply_gradients(zip(self.acc, self.trainable_variables))
                self.step_count.assign(0)
                for i in range(len(self.acc)):
                    self.acc[i].assign(tf.zeros_like(self.acc[i]))
    ''')
    assert found(text) == []


def test_python_list_accumulation_divided_at_the_apply_is_clean():
    text = src('''
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.build((None, 16))
        optimizer = tf.keras.optimizers.SGD(0.1)
        avg_steps = 4
        mean_grads = [tf.zeros_like(v) for v in model.trainable_variables]
        count = 0
        for x, y in tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 16)), tf.random.normal((64, 1)))).batch(8).repeat():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            mean_grads = [m + g for m, g in zip(mean_grads, grads)]
            count += 1
            if count == avg_steps:
                optimizer.apply_gradients(zip([g / avg_steps for g in mean_grads], model.trainable_variables))
                mean_grads = [tf.zeros_like(v) for v in model.trainable_variables]
                count = 0
    ''')
    assert found(text) == []


def test_inner_micro_step_loop_over_one_batch_is_clean():
    """A window of k slices of one batch (`for i in tf.range(k)`), the loss a mean over k times the
    slice (a divisor that names k inside a keyword argument): no partial window, scaled."""
    text = src('''
        import tensorflow as tf


        class Trainer:
            def __init__(self, model, optimizer, gradient_accumulation_steps):
                self.model = model
                self.optimizer = optimizer
                self.gradient_accumulation_steps = gradient_accumulation_steps
                self.acc = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]

            def one_step(self, batch, batch_size):
                for i in tf.range(self.gradient_accumulation_steps):
                    part = batch[i * batch_size:(i + 1) * batch_size]
                    with tf.GradientTape() as tape:
                        per_example = self.model(part)
                        loss = tf.nn.compute_average_loss(
                            per_example, global_batch_size=batch_size * self.gradient_accumulation_steps
                        )
                    grads = tape.gradient(loss, self.model.trainable_variables)
                    for a, g in zip(self.acc, grads):
                        a.assign_add(g)
                self.optimizer.apply_gradients(zip(self.acc, self.model.trainable_variables))
                for a in self.acc:
                    a.assign(tf.zeros_like(a))
    ''')
    assert found(text) == []


def test_acc010_through_a_loss_scale_wrapper_of_an_accumulating_optimizer():
    text = src('''
        import keras
        import tensorflow as tf

        accum_steps = 4
        model = keras.Sequential([keras.layers.Dense(1)])
        inner = keras.optimizers.Adam(1e-3, gradient_accumulation_steps=accum_steps)
        optimizer = keras.optimizers.LossScaleOptimizer(inner)
        for x, y in tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 16)), tf.random.normal((64, 1)))).batch(8):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y)) / accum_steps
                scaled = optimizer.scale_loss(loss)
            grads = tape.gradient(scaled, model.trainable_variables)  # <ACC010
            optimizer.apply(grads, model.trainable_variables)
    ''')
    assert_marked(text)
    assert found(text.replace(" / accum_steps", "").replace("  # <ACC010", "")) == []


PYTHON_LIST_SUM = '''
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, 16))
optimizer = tf.keras.optimizers.SGD(0.1)
avg_steps = 4
summed = [tf.zeros_like(v) for v in model.trainable_variables]
for step, (x, y) in enumerate(tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 16)), tf.random.normal((64, 1)))).batch(8).repeat()):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    summed = [s + g for s, g in zip(summed, grads)]
    if (step + 1) % avg_steps == 0:
        optimizer.apply_gradients(zip(summed, model.trainable_variables))  # <ACC001
        summed = [tf.zeros_like(v) for v in model.trainable_variables]
'''


def test_python_list_accumulation_applied_as_sum():
    text = src(PYTHON_LIST_SUM)
    assert_marked(text)
    result = fix_source(text, "case.py")
    assert result.fixed_source is not None
    assert "zip([g / tf.cast(avg_steps, g.dtype) for g in summed], model.trainable_variables)" in result.fixed_source
    assert found(result.fixed_source) == []


def test_python_list_reset_every_step():
    text = src(PYTHON_LIST_SUM).replace("  # <ACC001", "").replace(
        "    with tf.GradientTape() as tape:\n",
        "    summed = [tf.zeros_like(v) for v in model.trainable_variables]  # <ACC007\n    with tf.GradientTape() as tape:\n",
    ).replace("s + g for", "s + g / avg_steps for")
    assert_marked(text)


def test_python_list_divided_as_it_is_added_is_clean():
    text = src(PYTHON_LIST_SUM).replace("  # <ACC001", "").replace("s + g for", "s + g / avg_steps for")
    assert found(text) == []


def test_python_list_sum_of_other_lists_is_no_accumulator():
    """`total = [a + b for a, b in zip(left, right)]`: two other lists added, nothing accumulates."""
    text = src('''
        import tensorflow as tf

        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.SGD(0.1)
        for x, y in tf.data.Dataset.from_tensor_slices((tf.random.normal((64, 16)), tf.random.normal((64, 1)))).batch(8):
            with tf.GradientTape(persistent=True) as tape:
                out = model(x)
                main = tf.reduce_mean(tf.square(out - y))
                aux = tf.reduce_mean(tf.abs(out))
            main_grads = tape.gradient(main, model.trainable_variables)
            aux_grads = tape.gradient(aux, model.trainable_variables)
            total = [a + b for a, b in zip(main_grads, aux_grads)]
            optimizer.apply_gradients(zip(total, model.trainable_variables))
    ''')
    assert found(text) == []


def test_acc011_wrapper_built_inside_the_call():
    text = src('''
        import tensorflow as tf
        from accumulation import GradientAccumulateOptimizer

        inner = tf.keras.optimizers.Adam(1e-3)
        optimizer = GradientAccumulateOptimizer(tf.keras.mixed_precision.LossScaleOptimizer(inner), accum_steps=4)  # <ACC011
        plain = GradientAccumulateOptimizer(inner, accum_steps=4)
    ''')
    assert_marked(text)
    message = check_source(text, "case.py").findings[0].message
    assert "built in this call" in message and "GradientAccumulateOptimizer" in message


def test_seed_patch_dividing_as_it_accumulates_is_clean_of_acc001():
    """The seed's tf.cond / tf.math.mod gate with the gradients divided by n as they are added."""
    text = src(SEED_COND).replace(
        "self.accu_gradients[i].assign_add(grad)", "self.accu_gradients[i].assign_add(grad / tf.cast(self.n, grad.dtype))"
    ).replace("  # <ACC001", "")
    assert found(text) == marked(text) == [("ACC011", 28)]


def test_torch_helper_named_apply_gradients_is_no_keras_step():
    text = src('''
        import torch


        class Trainer:
            def __init__(self, model, loader, k):
                self.model, self.loader, self.k = model, loader, k
                self.optimizer = torch.optim.AdamW(model.parameters())

            def apply_gradients(self):
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.optimizer.step()
                self.optimizer.zero_grad()

            def train(self):
                for i, (x, y) in enumerate(self.loader):
                    loss = torch.nn.functional.mse_loss(self.model(x), y) / self.k
                    loss.backward()
                    if (i + 1) % self.k == 0 or i + 1 == len(self.loader):
                        self.apply_gradients()
    ''')
    assert found(text) == []


def test_compiled_loss_function_dividing_by_k_is_no_sum():
    """`self.compiled_loss(...)` in train_step is the function handed to compile: here it divides."""
    text = src(TRAIN_STEP_COND_SUM).replace("  # <ACC001", "") + src('''

        N_GRADIENTS = 4


        def window_mse(y_true, y_pred):
            return tf.reduce_mean(tf.square(y_true - y_pred)) / N_GRADIENTS


        model = CustomTrainStep(N_GRADIENTS)
        model.compile(optimizer=tf.keras.optimizers.Adam(), loss=window_mse)
    ''')
    assert found(text) == []
    assert found(text.replace(" / N_GRADIENTS", "")) == [("ACC001", 27)]


def test_acc007_reset_every_train_step_while_tf_cond_holds_the_apply():
    text = src('''
        import tensorflow as tf


        class AccumModel(tf.keras.Model):
            def __init__(self, k, **kwargs):
                super().__init__(**kwargs)
                self.k = tf.constant(k, dtype=tf.int32)
                self.count = tf.Variable(0, dtype=tf.int32, trainable=False)
                self.sums = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.trainable_variables]

            def train_step(self, data):
                x, y = data
                self.count.assign_add(1)
                for total in self.sums:  # <ACC007
                    total.assign(tf.zeros_like(total))
                with tf.GradientTape() as tape:
                    loss = self.compiled_loss(y, self(x, training=True)) / tf.cast(self.k, tf.float32)
                grads = tape.gradient(loss, self.trainable_variables)
                for total, grad in zip(self.sums, grads):
                    total.assign_add(grad)
                tf.cond(tf.equal(self.count % self.k, 0), self.apply_window, lambda: None)
                return {"loss": loss}

            def apply_window(self):
                self.optimizer.apply_gradients(zip(self.sums, self.trainable_variables))
    ''')
    assert_marked(text)
    moved = text.replace(
        "        for total in self.sums:  # <ACC007\n            total.assign(tf.zeros_like(total))\n", ""
    ) + "        for total in self.sums:\n            total.assign(tf.zeros_like(total))\n"
    assert found(moved) == []


def test_acc007_patched_apply_gradients_resetting_every_call():
    text = src(SEED_COND).replace("  # <ACC001", "").replace("  # <ACC011", "").replace(
        "        # Always accumulate gradients\n",
        "        for acc in self.accu_gradients:  # <ACC007\n            acc.assign(tf.zeros_like(acc))\n",
    ).replace("self.accu_gradients[i].assign_add(grad)", "self.accu_gradients[i].assign_add(grad / tf.cast(self.n, grad.dtype))")
    codes = [(code, row) for code, row in found(text) if code == "ACC007"]
    assert codes == [(code, row) for code, row in marked(text)]


def test_acc001_k_is_the_gate_of_the_apply_not_a_logging_frequency():
    text = src(CUSTOM_LOOP_SUM).replace(
        "    grads = tape.gradient(loss, model.trainable_variables)\n",
        "    grads = tape.gradient(loss, model.trainable_variables)\n    if step % log_every == 0:\n        print(step, float(loss))\n",
    ).replace("accum_steps = 4\n", "accum_steps = 4\nlog_every = 50\n")
    assert_marked(text)
    finding = check_source(text, "case.py").findings[0]
    assert "`accum_steps`" in finding.message and "log_every" not in finding.message
    fixed = fix_source(text, "case.py").fixed_source
    assert fixed is not None and "tf.cast(accum_steps, grad.dtype)" in fixed


def test_acc001_window_size_named_by_accumulation_among_two_counts():
    """A tf.cond gate in another method and a logging count in sight: k is the accumulation's."""
    text = src(TRAIN_STEP_COND_SUM).replace(
        "        self.compiled_metrics.update_state(y, y_pred)\n",
        "        if self.n_acum_step % self.log_every == 0:\n            tf.print(loss)\n        self.compiled_metrics.update_state(y, y_pred)\n",
    )
    assert_marked(text)
    finding = check_source(text, "case.py").findings[0]
    assert "`self.n_gradients`" in finding.message and finding.fix is not None


def test_acc001_two_candidate_window_sizes_offer_no_fix():
    """Two counts and neither says accumulation: k is not named, and no fix is offered."""
    text = src(TRAIN_STEP_COND_SUM).replace("n_gradients", "n").replace(
        "        self.compiled_metrics.update_state(y, y_pred)\n",
        "        if self.n_acum_step % self.period == 0:\n            tf.print(loss)\n        self.compiled_metrics.update_state(y, y_pred)\n",
    )
    assert_marked(text)
    finding = check_source(text, "case.py").findings[0]
    assert finding.fix is None and "steps k:" in finding.message


def test_compiled_loss_normalised_by_its_token_count_is_no_double_division():
    """A loss function that divides by the number of unmasked steps, compiled with an optimizer that
    accumulates: a per-batch normalisation, not a division by the window."""
    text = src('''
        import keras
        import tensorflow as tf


        def masked_crossentropy(y_true, y_pred):
            per_step = tf.keras.losses.categorical_crossentropy(y_true, y_pred)
            mask = tf.cast(tf.reduce_sum(y_true, axis=-1) > 0, tf.float32)
            return tf.reduce_sum(per_step * mask) / tf.reduce_sum(mask)


        def compiled(model, gradient_accumulation_steps=4):
            model.compile(optimizer=keras.optimizers.AdamW(gradient_accumulation_steps=gradient_accumulation_steps),
                          loss=masked_crossentropy)
            return model
    ''')
    assert found(text) == []
    # ... and the same loss also divided by the optimizer's window is divided twice.
    twice = text.replace("/ tf.reduce_sum(mask)", "/ tf.reduce_sum(mask) / GAS").replace(
        "def compiled(model, gradient_accumulation_steps=4):", "GAS = 4\n\n\ndef compiled(model):"
    ).replace("AdamW(gradient_accumulation_steps=gradient_accumulation_steps)", "AdamW(gradient_accumulation_steps=GAS)")
    assert found(twice) == [("ACC010", 8)]


def test_acc005_keras3_custom_loop():
    text = src('''
        import keras
        import numpy as np
        import tensorflow as tf

        model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(1)])
        optimizer = keras.optimizers.SGD(0.1)
        x_all, y_all = np.random.normal(size=(100, 16)), np.random.normal(size=(100, 1))
        batches = [(x_all[i:i + 8], y_all[i:i + 8]) for i in range(0, 100, 8)]
        k = 4
        sums = [keras.Variable(keras.ops.zeros_like(v), trainable=False) for v in model.trainable_variables]
        for epoch in range(3):
            for step, (x, y) in enumerate(batches):
                with tf.GradientTape() as tape:
                    loss = keras.ops.mean(keras.losses.mean_squared_error(y, model(x)))
                grads = tape.gradient(loss, model.trainable_variables)
                for total, grad in zip(sums, grads):
                    total.assign_add(grad / k)
                if (step + 1) % k == 0:  # <ACC005
                    optimizer.apply(sums, model.trainable_variables)
                    for total in sums:
                        total.assign(keras.ops.zeros_like(total))
    ''')
    assert_marked(text)


def test_acc007_accumulation_wrapper_class_resetting_every_call():
    text = src(WRAPPER_CLASS_SUM).replace("  # <ACC001", "").replace(
        "        grads_and_vars = list(grads_and_vars)\n",
        "        grads_and_vars = list(grads_and_vars)\n"
        "        for acc in self.grads:  # <ACC007\n"
        "            acc.assign(tf.zeros_like(acc))\n",
    ).replace("acc.assign_add(grad)", "acc.assign_add(grad / self.steps)")
    assert_marked(text)


# --- ACC014: accumulators never set back to zero --------------------------------------------------
NEVER_RESET = '''
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, 16))
optimizer = tf.keras.optimizers.SGD(0.1)
dataset = tf.data.Dataset.from_tensor_slices((tf.random.normal((96, 16)), tf.random.normal((96, 1)))).batch(8).repeat()
k = 4
accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]

for step, (x, y) in enumerate(dataset.take(1000)):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y)) / k
    grads = tape.gradient(loss, model.trainable_variables)
    for a, g in zip(accum, grads):
        a.assign_add(g)
    if (step + 1) % k == 0:
        optimizer.apply_gradients(zip(accum, model.trainable_variables))  # <ACC014
'''


def test_acc014_accumulators_never_reset():
    assert_marked(src(NEVER_RESET))


@pytest.mark.parametrize("extra", [
    "        reset(accum)\n",  # handed to a function that may reset them
    "        accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]\n",  # re-created
    "        for a in accum:\n            a.assign(a * 0.0)\n",  # set to zero another way
    "        for a in accum:\n            a.assign_sub(a)\n",  # taken back out
], ids=["helper", "re-created", "times-zero", "assign_sub"])
def test_acc014_reset_in_any_form_is_clean(extra):
    text = src(NEVER_RESET).replace("  # <ACC014", "") + extra
    assert found(text) == []


def test_comprehension_name_like_an_accumulator_is_not_its_apply():
    text = src(CUSTOM_LOOP_SUM).replace("  # <ACC001", "").replace("for acc in accum:", "for a in accum:").replace(
        "acc.assign(tf.zeros_like(acc))", "a.assign(tf.zeros_like(a))"
    ).replace("for acc, g in zip(accum, grads):\n        acc.assign_add(g)", "for a, g in zip(accum, grads):\n        a.assign_add(g)")
    text = text.replace("accum", "acc")
    assert "ACC001" in [code for code, _ in found(text)]  # the collection is `acc` now
    text = text.replace(
        "optimizer.apply_gradients(zip(acc, model.trainable_variables))",
        "optimizer.apply_gradients(zip([acc for acc in clipped(grads)], model.trainable_variables))",
    )
    assert "zip([acc for acc" in text
    assert "ACC001" not in [code for code, _ in found(text)]
