"""The typed vocabulary of the framework layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Role(str, Enum):
    """What an object in the training loop is."""

    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    SCALER = "scaler"
    ACCELERATOR = "accelerator"
    FABRIC = "fabric"
    ENGINE = "engine"  # a DeepSpeed engine: model, backward and step in one object
    DDP = "ddp"  # a model wrapped to all-reduce gradients on backward
    LOADER = "loader"


class Framework(str, Enum):
    """Who runs the backward pass (and may divide the loss on the way)."""

    TORCH = "torch"
    AMP = "amp"
    ACCELERATE = "accelerate"
    DEEPSPEED = "deepspeed"
    LIGHTNING = "lightning"  # manual optimisation: self.manual_backward(loss)
    LIGHTNING_AUTO = "lightning-auto"  # automatic optimisation: the value training_step returns
    FABRIC = "fabric"
    DDP = "ddp"


@dataclass(frozen=True)
class FrameworkSpec:
    framework: Framework
    constructors: dict[str, Role] = field(default_factory=dict)  # `Accelerator(...)` -> ACCELERATOR
    backward_roles: frozenset[Role] = frozenset()  # `<role>.backward(loss)` is this framework's
    self_unscaling_clip_roles: frozenset[Role] = frozenset()  # `<role>.clip_grad_norm_()` unscales first
    self_unscaling_clip_methods: frozenset[str] = frozenset()  # `self.clip_gradients(...)` likewise
    sync_controls: frozenset[str] = frozenset()  # names that switch gradient sync off for a micro-step
    zeroing_step_roles: frozenset[Role] = frozenset()  # `<role>.step()` zeroes the gradients itself
    zeroing_frameworks: frozenset[Framework] = frozenset()  # whoever runs this backward zeroes the gradients too
    optimizer_getters: frozenset[str] = frozenset()  # `self.optimizers()` hands back the optimizer it already has
