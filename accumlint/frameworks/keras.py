"""Keras and TensorFlow (tf.keras in TensorFlow 2.x, and Keras 3): `tf.GradientTape` records the
forward pass and `tape.gradient(loss, variables)` returns the gradients (nothing adds up in a
`.grad`: accumulation is done by hand into variables with `assign_add`, or by a Keras 3 optimizer
built with `gradient_accumulation_steps`, which averages the window by itself);
`optimizer.apply_gradients(zip(grads, vars))` (Keras 3 also `optimizer.apply(grads, vars)`) is the
step. `LossScaleOptimizer` wraps an inner optimizer and scales the loss
(`get_scaled_loss`/`get_unscaled_gradients` in tf.keras, `scale_loss` in Keras 3). A Keras model's
`train_step` override runs once per batch under `model.fit`. Eager TensorFlow tensors hold no
autograd graph: there is nothing to detach. TensorFlow and Keras are never imported."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

TAPE_CLASSES = frozenset({"GradientTape"})
GRADIENT_METHOD = "gradient"
STEP_METHODS = frozenset({"apply_gradients"})
# Keras 3's `optimizer.apply(grads, vars)`: a step only on an object known to be an optimizer.
OPTIMIZER_ONLY_STEP_METHODS = frozenset({"apply"})
LOSS_SCALE_WRAPPERS = frozenset({"LossScaleOptimizer", "LossScaleOptimizerV3", "LossScaleOptimizerV1"})
# Keras 3: `keras.optimizers.Adam(..., gradient_accumulation_steps=k)`.
ACCUMULATION_KEYWORD = "gradient_accumulation_steps"
# What a loss-scale wrapper does to the loss and back to the gradients (the net factor is one).
SCALE_LOSS_METHODS = frozenset({"get_scaled_loss", "scale_loss"})
UNSCALE_GRADIENT_METHODS = frozenset({"get_unscaled_gradients"})
# A Keras model's own loss (`self.compiled_loss(y, y_pred)`, `self.compute_loss(...)`): the batch
# loss as compiled, never divided by an accumulation window.
LOSS_METHODS = frozenset({"compiled_loss", "compute_loss"})
# Keras optimizer classes that torch_core does not already name.
OPTIMIZER_CLASSES = frozenset({"Nadam", "Ftrl", "Lamb"}) | LOSS_SCALE_WRAPPERS
# `class M(keras.Model): def train_step(self, data)`: called once per batch by `model.fit`.
MODEL_BASE_SUFFIXES = ("Model", "Sequential", "Functional")
TRAIN_STEP = "train_step"
IMPORT_ROOTS = frozenset({"tensorflow", "keras", "tf_keras"})
# Calls that choose between two functions on a tensor condition (`tf.cond(pred, true_fn, false_fn)`).
CONDITIONAL_CALLS = frozenset({"cond"})
# The window's counter compared with k by TensorFlow ops.
MODULO_FUNCTIONS = frozenset({"mod", "floormod", "truncatemod"})
EQUALITY_FUNCTIONS = frozenset({"equal", "greater_equal"})
BOOLEAN_FUNCTIONS = frozenset({
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_not", "logical_and",
    "logical_or", "logical_xor", "is_finite", "reduce_all", "reduce_any",
})
# An accumulator's value set back to zero.
ZERO_FACTORIES = frozenset({"zeros_like", "zeros"})
ADD_METHOD = "assign_add"
COMPILE_METHOD = "compile"
FIT_METHOD = "fit"
ASSIGN_METHOD = "assign"

SPEC = FrameworkSpec(
    Framework.KERAS,
    constructors={
        **{name: Role.TAPE for name in TAPE_CLASSES},
        **{name: Role.OPTIMIZER for name in OPTIMIZER_CLASSES},
    },
    zeroing_frameworks=frozenset({Framework.KERAS}),  # every tape.gradient returns fresh gradients
    gradient_methods={Role.TAPE: GRADIENT_METHOD},
    step_methods=STEP_METHODS,
    loss_scale_wrappers=LOSS_SCALE_WRAPPERS,
    accumulation_keywords=frozenset({ACCUMULATION_KEYWORD}),
    graph_free=True,
)
