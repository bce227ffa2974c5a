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
    TAPE = "tape"  # records a forward pass and computes gradients from it (tf.GradientTape)


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
    KERAS = "keras"  # TensorFlow / Keras: gradients are returned by a tape, applied by the optimizer
    GEMINI = "colossalai-gemini"  # its optimizer's backward overwrites the gradients of the last one


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
    gradient_methods: dict[Role, str] = field(default_factory=dict)  # `tape.gradient(loss, vars)`: a backward that returns the gradients
    step_methods: frozenset[str] = frozenset()  # `<optimizer>.apply_gradients(...)` is this framework's step
    step_functions: frozenset[str] = frozenset()  # `xm.optimizer_step(optimizer)`: a function that steps its first argument
    loss_scale_wrappers: frozenset[str] = frozenset()  # `LossScaleOptimizer(inner)`: an optimizer wrapping another
    accumulation_keywords: frozenset[str] = frozenset()  # an optimizer built with it accumulates and averages by itself
    graph_free: bool = False  # its tensors hold no autograd graph (the tape does): nothing to detach
    # optimizers (`<built by it>.backward(loss)`) whose backward replaces the gradients instead of adding to them
    overwriting_optimizers: frozenset[str] = frozenset()
    package: str = ""  # the package those optimizers must be imported from
