"""Plain PyTorch: optimizers, LR schedulers and data loaders by their constructors, and how a
loss is reduced over its samples."""

import ast
from typing import Optional

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

OPTIMIZER_CLASSES = frozenset({
    "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "RMSprop", "Rprop", "LBFGS", "NAdam",
    "RAdam", "SparseAdam", "ASGD", "Adafactor", "Lion", "FusedAdam", "FusedLAMB", "LAMB",
    "DeepSpeedCPUAdam", "ZeroRedundancyOptimizer", "AdamW8bit", "Adam8bit", "Muon", "Shampoo",
})
# Factories that return an optimizer in common training code.
OPTIMIZER_FACTORIES = frozenset({
    "create_optimizer", "get_optimizer", "build_optimizer", "configure_optimizers", "optimizers",
})
CLIP_FUNCTIONS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
# Methods of `nn.Module` that no tensor has: what they are called on holds modules, and what they
# return (parameters, submodules, state, the module itself) comes from no forward pass.
MODULE_ONLY_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children",
    "named_children", "state_dict", "load_state_dict", "train", "eval", "apply",
})
# A clip limit at or above this only measures the norm (`clip_grad_norm_(params, 1e9)` for a log):
# read the same way by the static ACC015 and by `accumlint run`.
MEASURING_CLIP_LIMIT = 1e6

SPEC = FrameworkSpec(
    Framework.TORCH,
    constructors={
        **{name: Role.OPTIMIZER for name in OPTIMIZER_CLASSES | OPTIMIZER_FACTORIES},
        "DataLoader": Role.LOADER,
    },
)


def loss_reduction(call: ast.Call) -> Optional[str]:
    """How a loss call or a criterion's constructor reduces over the samples, as its keywords say:
    "sum" (`reduction='sum'`, the legacy `size_average=False`), "none", "mean" (no such keyword:
    the default), or "unknown" (a value the code computes). None: the call names no reduction at
    all and is not a criterion (nothing to say)."""
    words = {kw.arg: kw.value for kw in call.keywords}
    reduction = words.get("reduction")
    if reduction is not None:
        if isinstance(reduction, ast.Constant) and reduction.value in {"sum", "none", "mean"}:
            return str(reduction.value)
        if isinstance(reduction, ast.Constant) and reduction.value == "batchmean":
            return "mean"  # KL divergence summed per sample, then averaged over the batch
        return "unknown"
    if "size_average" in words or "reduce" in words:
        size_average, reduce = words.get("size_average"), words.get("reduce")
        if isinstance(reduce, ast.Constant) and reduce.value is False:
            return "none"
        if isinstance(size_average, ast.Constant) and size_average.value is False:
            return "sum"
        return "unknown" if size_average is not None and not isinstance(size_average, ast.Constant) else "mean"
    return None
