"""PyTorch Lightning: `training_step` runs once per micro-batch; under automatic optimisation
Lightning runs backward on the value it returns, divided by `accumulate_grad_batches`; under
manual optimisation (`self.automatic_optimization = False`) the module calls
`self.manual_backward(loss)`. `self.clip_gradients(...)` unscales first. Automatic optimisation
also zeroes the gradients after each step; manual optimisation leaves that to the module."""

from accumlint.frameworks.spec import Framework, FrameworkSpec

MODULE_BASE_SUFFIX = "LightningModule"
TRAINING_STEP = "training_step"
MANUAL_BACKWARD = "manual_backward"
MANUAL_SWITCH = "automatic_optimization"
OPTIMIZERS_GETTER = "optimizers"

SPEC = FrameworkSpec(
    Framework.LIGHTNING,
    self_unscaling_clip_methods=frozenset({"clip_gradients"}),
    zeroing_frameworks=frozenset({Framework.LIGHTNING_AUTO}),
    optimizer_getters=frozenset({OPTIMIZERS_GETTER}),
)
