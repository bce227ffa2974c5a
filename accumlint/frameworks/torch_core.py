"""Plain PyTorch: optimizers, LR schedulers and data loaders by their constructors."""

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

SPEC = FrameworkSpec(
    Framework.TORCH,
    constructors={
        **{name: Role.OPTIMIZER for name in OPTIMIZER_CLASSES | OPTIMIZER_FACTORIES},
        "DataLoader": Role.LOADER,
    },
)
