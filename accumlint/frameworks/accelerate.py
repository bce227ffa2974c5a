"""Hugging Face Accelerate: `accelerator.backward(loss)` divides the loss by
`gradient_accumulation_steps` when the Accelerator was built with it, `accelerator.accumulate()`
skips sync, step, zeroing and prepared schedulers on non-final micro-steps, and
`accelerator.clip_grad_norm_` unscales first."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

ACCUMULATION_STEPS_KEYWORD = "gradient_accumulation_steps"
ACCUMULATION_PLUGIN_KEYWORD = "gradient_accumulation_plugin"
ACCUMULATE_CONTEXT = "accumulate"
PREPARE_METHODS = frozenset({"prepare"})

SPEC = FrameworkSpec(
    Framework.ACCELERATE,
    constructors={"Accelerator": Role.ACCELERATOR},
    backward_roles=frozenset({Role.ACCELERATOR}),
    self_unscaling_clip_roles=frozenset({Role.ACCELERATOR}),
    sync_controls=frozenset({ACCUMULATE_CONTEXT}),
)
