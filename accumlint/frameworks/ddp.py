"""DistributedDataParallel and FSDP: every backward all-reduces gradients across ranks unless the
micro-step runs under `no_sync()` (or sync is switched off by its flag or FSDP's setter)."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

# FSDP (`FullyShardedDataParallel`, `fully_shard`) reduce-scatters on every backward too, but there
# skipping `no_sync()` is the documented way to save memory (under it each rank keeps whole
# unsharded gradients): a trade-off, not ACC009, so it is no wrapper here.
WRAPPERS = frozenset({"DistributedDataParallel"})
NO_SYNC_CONTEXT = "no_sync"
SYNC_FLAG = "require_backward_grad_sync"  # read by the forward pass, like no_sync()

SPEC = FrameworkSpec(
    Framework.DDP,
    constructors={name: Role.DDP for name in WRAPPERS},
    sync_controls=frozenset({
        NO_SYNC_CONTEXT, SYNC_FLAG, "set_requires_gradient_sync",
        # apex's and DeepSpeed's older DDP wrappers switch the all-reduce off and on by hand
        "disable_allreduce", "enable_allreduce", "disable_need_reduction", "enable_need_reduction",
    }),
)

REGISTER_COMM_HOOK = "register_comm_hook"
# torch's own hooks only reduce (or compress) the gradients; a hook of the project's own may also
# rescale them, as a division by the accumulation steps out of sight of the loop.
BUILTIN_COMM_HOOKS = frozenset({
    "allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
    "bf16_compress_wrapper", "powerSGD_hook", "batched_powerSGD_hook", "noop_hook",
})
