"""Mixed precision: the GradScaler multiplies the loss, and so every gradient, by its scale."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

SPEC = FrameworkSpec(
    Framework.AMP,
    constructors={"GradScaler": Role.SCALER, "ShardedGradScaler": Role.SCALER},
)
