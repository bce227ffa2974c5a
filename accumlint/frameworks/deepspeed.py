"""DeepSpeed: the engine's `backward` divides the loss by the configured accumulation steps, its
`step` applies once per window and zeroes the gradients after it, and it clips and unscales by
itself."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

# The config key that sets the engine's accumulation steps (its backward divides the loss by it),
# and the strategy classes that run a DeepSpeed engine from such a config (Fabric, Lightning).
CONFIG_ACCUMULATION_KEY = "gradient_accumulation_steps"
STRATEGIES = frozenset({"DeepSpeedStrategy"})

# The attribute a trainer keeps its engine in (`self.deepspeed` of Hugging Face's Trainer): as an
# attribute, never the module itself (`deepspeed.initialize`).
ENGINE_ATTRIBUTE = "deepspeed"

# `deepspeed.initialize(...)` returns (engine, optimizer, loader, scheduler).
INITIALIZE_RESULTS = {0: Role.ENGINE, 1: Role.OPTIMIZER, 2: Role.LOADER, 3: Role.SCHEDULER}

SPEC = FrameworkSpec(
    Framework.DEEPSPEED,
    backward_roles=frozenset({Role.ENGINE}),
    self_unscaling_clip_roles=frozenset({Role.ENGINE}),
    zeroing_step_roles=frozenset({Role.ENGINE}),
    zeroing_frameworks=frozenset({Framework.DEEPSPEED}),
)
