"""ColossalAI Gemini (`ZeroDDP` with `ZeroOptimizer`, `GeminiAdamOptimizer`): the optimizer's
`backward(loss)` copies each micro-batch's gradients into the parameter chunks over the ones
already there, so gradients never add up across backward calls. Accumulating by hand is no
accumulation at all there: dividing the loss by k would only shrink the one micro-batch that
reaches the step, and nothing builds up for a missing `zero_grad` to leave behind."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

# Optimizers of ColossalAI's Gemini stack, by class name; read as such only when imported from
# ColossalAI (its low-level ZeRO and older sharded optimizers do add gradients up).
GEMINI_OPTIMIZERS = frozenset({"ZeroOptimizer", "GeminiAdamOptimizer", "GeminiOptimizer"})
PACKAGE = "colossalai"

SPEC = FrameworkSpec(
    Framework.GEMINI,
    constructors={name: Role.OPTIMIZER for name in GEMINI_OPTIMIZERS},
    zeroing_frameworks=frozenset({Framework.GEMINI}),
    overwriting_optimizers=GEMINI_OPTIMIZERS,
    package=PACKAGE,
)
