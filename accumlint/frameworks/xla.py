"""PyTorch/XLA: `xm.optimizer_step(optimizer)` reduces the gradients across replicas and steps
the optimizer it is given."""

from accumlint.frameworks.spec import Framework, FrameworkSpec

STEP_FUNCTIONS = frozenset({"torch_xla.core.xla_model.optimizer_step"})

SPEC = FrameworkSpec(Framework.TORCH, step_functions=STEP_FUNCTIONS)
