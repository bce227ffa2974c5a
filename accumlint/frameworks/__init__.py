"""What each training framework does to the accumulation contract, in one place.

One module per framework states its facts as data (which constructors make which objects, whose
`backward` it is, who divides the loss by the window, who unscales before clipping, which calls
control gradient sync). The analysis turns calls into typed events with these facts; rules read
the facts, never framework API names."""

from __future__ import annotations

from typing import Optional

from accumlint.frameworks import accelerate, amp, colossalai, ddp, deepspeed, fabric, keras, lightning, torch_core, xla
from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

SPECS: tuple[FrameworkSpec, ...] = (
    torch_core.SPEC, amp.SPEC, accelerate.SPEC, deepspeed.SPEC, lightning.SPEC, fabric.SPEC, ddp.SPEC, keras.SPEC,
    xla.SPEC, colossalai.SPEC,
)

_CONSTRUCTORS: dict[str, Role] = {name: role for spec in SPECS for name, role in spec.constructors.items()}
_BACKWARD: dict[Role, Framework] = {role: spec.framework for spec in SPECS for role in spec.backward_roles}
SELF_UNSCALING_ROLES: frozenset[Role] = frozenset(r for spec in SPECS for r in spec.self_unscaling_clip_roles)
SELF_UNSCALING_METHODS: frozenset[str] = frozenset(m for spec in SPECS for m in spec.self_unscaling_clip_methods)
SYNC_CONTROLS: frozenset[str] = frozenset(name for spec in SPECS for name in spec.sync_controls)
# Who zeroes the gradients without a visible `zero_grad`: an object whose `step()` does it, a
# framework that does it around the backward it runs.
ZEROING_STEP_ROLES: frozenset[Role] = frozenset(r for spec in SPECS for r in spec.zeroing_step_roles)
ZEROING_FRAMEWORKS: frozenset[Framework] = frozenset(f for spec in SPECS for f in spec.zeroing_frameworks)
# Calls that return an optimizer that already exists (so assigning one in a loop re-creates nothing).
OPTIMIZER_GETTERS: frozenset[str] = frozenset(name for spec in SPECS for name in spec.optimizer_getters)
# `tape.gradient(loss, vars)`: the method of an object of this role that computes gradients, and whose.
GRADIENT_METHODS: dict[Role, tuple[str, Framework]] = {
    role: (method, spec.framework) for spec in SPECS for role, method in spec.gradient_methods.items()
}
# Optimizer methods besides `step()` that apply an update (`apply_gradients`).
STEP_METHODS: frozenset[str] = frozenset(m for spec in SPECS for m in spec.step_methods)
# Functions that step the optimizer passed as their first argument (dotted, as imported).
STEP_FUNCTIONS: frozenset[str] = frozenset(f for spec in SPECS for f in spec.step_functions)
# Optimizers that wrap another one to scale the loss (`LossScaleOptimizer(inner)`).
LOSS_SCALE_WRAPPERS: frozenset[str] = frozenset(n for spec in SPECS for n in spec.loss_scale_wrappers)
# Keywords of an optimizer constructor that make it accumulate, and average, by itself.
ACCUMULATION_KEYWORDS: frozenset[str] = frozenset(k for spec in SPECS for k in spec.accumulation_keywords)
# Frameworks whose backward returns gradients instead of adding them into `.grad`, and whose
# tensors hold no autograd graph.
GRAPH_FREE_FRAMEWORKS: frozenset[Framework] = frozenset(spec.framework for spec in SPECS if spec.graph_free)
# Frameworks whose backward writes each micro-batch's gradients over the last: nothing adds up,
# so there is no window for a division by k to scale.
OVERWRITING_FRAMEWORKS: frozenset[Framework] = frozenset(spec.framework for spec in SPECS if spec.overwriting_optimizers)


def overwriting_framework(constructor: str) -> Optional[Framework]:
    """The framework whose optimizer `constructor` (dotted, as imported: `colossalai.zero.ZeroOptimizer`)
    builds, when that optimizer's backward overwrites the gradients."""
    package, last = constructor.split(".")[0], constructor.rsplit(".", 1)[-1]
    return next(
        (spec.framework for spec in SPECS if last in spec.overwriting_optimizers and package == spec.package), None
    )


def constructed_role(class_name: str) -> Optional[Role]:
    """The role of an object built by `class_name(...)` (the last part of its dotted name)."""
    return _CONSTRUCTORS.get(class_name)


def backward_framework(role: Optional[Role]) -> Optional[Framework]:
    """Whose `backward(loss)` a call on an object of this role is (`accelerator.backward`)."""
    return _BACKWARD.get(role) if role is not None else None


__all__ = [
    "Framework", "FrameworkSpec", "Role", "SPECS", "SELF_UNSCALING_ROLES", "SELF_UNSCALING_METHODS",
    "ACCUMULATION_KEYWORDS", "GRADIENT_METHODS", "GRAPH_FREE_FRAMEWORKS", "LOSS_SCALE_WRAPPERS", "OVERWRITING_FRAMEWORKS", "STEP_METHODS",
    "STEP_FUNCTIONS", "OPTIMIZER_GETTERS", "SYNC_CONTROLS", "ZEROING_FRAMEWORKS", "ZEROING_STEP_ROLES", "backward_framework", "overwriting_framework",
    "constructed_role",
]
