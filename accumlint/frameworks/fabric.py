"""Lightning Fabric: `fabric.backward(loss)`, `fabric.no_backward_sync(model)` for non-final
micro-steps, and `fabric.clip_gradients` that unscales first."""

from accumlint.frameworks.spec import Framework, FrameworkSpec, Role

SETUP_METHODS = frozenset({"setup"})  # `model, optimizer = fabric.setup(model, optimizer)`

SPEC = FrameworkSpec(
    Framework.FABRIC,
    constructors={"Fabric": Role.FABRIC},
    backward_roles=frozenset({Role.FABRIC}),
    self_unscaling_clip_roles=frozenset({Role.FABRIC}),
    sync_controls=frozenset({"no_backward_sync"}),
)
