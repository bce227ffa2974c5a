"""The training-loop events of a file: backward passes, steps, zeroing, clipping, scaler and
scheduler calls, each with the statement it sits in."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Optional

from accumlint.analysis import accumulators
from accumlint.analysis import roles as R
from accumlint.analysis.collect import CallSite, Collected, Scope, Stmt, enclosing_class
from accumlint.analysis.exprs import class_like, dotted, is_constant, is_true, keyword, last_part, method_of, positional
from accumlint import frameworks
from accumlint.frameworks import Framework, keras, lightning, torch_core, transformers

if TYPE_CHECKING:
    from accumlint.analysis.calls import Callee, Resolver


class EventKind(str, Enum):
    """What a statement does to the loss, the gradients or the optimizer."""

    BACKWARD = "backward"
    STEP = "step"
    ZERO = "zero_grad"
    CLIP = "clip"
    UNSCALE = "unscale"
    UPDATE = "update"
    SCHED = "sched_step"


BACKWARD, STEP, ZERO, CLIP, UNSCALE, UPDATE, SCHED = EventKind
_CLIP_NAMES = torch_core.CLIP_FUNCTIONS | frameworks.SELF_UNSCALING_METHODS
HELPER_KINDS = frozenset(EventKind)


@dataclass(eq=False, repr=False)
class Event:
    kind: EventKind
    stmt: Stmt
    call: Optional[ast.Call] = None
    receiver: Optional[str] = None
    tensor: Optional[ast.expr] = None  # what a backward differentiates
    scaler: Optional[str] = None  # `scaler` of scaler.scale(x).backward() / scaler.step(opt)
    optimizer: Optional[str] = None  # argument of scaler.step / scaler.unscale_
    framework: Optional[Framework] = None  # who runs a backward (Accelerate, DeepSpeed, ...)
    retain_graph: Optional[ast.expr] = None
    self_unscaling: bool = False  # a clip that unscales by itself (Accelerate, Lightning, Fabric)
    helper: Optional[str] = None  # the called function the event happens in
    callee: Optional[Callee] = None  # the function it runs, when the call was resolved

    @property
    def order(self) -> int:
        return self.stmt.order


def _backward(site: CallSite, roles: R.Roles) -> Optional[Event]:
    call = site.call
    receiver, method = method_of(call)
    name = dotted(receiver) if receiver is not None else None
    event = Event(BACKWARD, site.stmt, call, receiver=name, retain_graph=keyword(call, "retain_graph"))
    if method == lightning.MANUAL_BACKWARD:
        event.tensor, event.framework = positional(call, 0), Framework.LIGHTNING
        return event
    if receiver is None:  # `from torch.autograd import backward`
        if roles.canonical("backward").endswith("autograd.backward"):
            event.tensor = positional(call, 0) or keyword(call, "tensors")
            return event
        return None
    role = roles.role(name)
    if name is not None and roles.canonical(name).endswith("autograd"):
        event.tensor = positional(call, 0) or keyword(call, "tensors")
    elif frameworks.backward_framework(role) is not None:
        event.tensor, event.framework = positional(call, 0), frameworks.backward_framework(role)
    elif role == R.OPTIMIZER:  # a loss-scaling optimizer's `optimizer.backward(loss)` (DeepSpeed, apex)
        event.tensor, event.framework = positional(call, 0), roles.overwriting_optimizers.get(name or "")
    elif name is not None and roles.by_name.get(name) is not None:
        return None  # built as a scheduler, a loader, a model wrapper: no tensor's backward
    elif isinstance(receiver, ast.Call) and method_of(receiver)[1] == "scale":
        scale_owner = method_of(receiver)[0]
        event.tensor = positional(receiver, 0)
        event.scaler = dotted(scale_owner) if scale_owner is not None else None
    elif _steps_itself(name, call, site.stmt.scope):
        event.tensor, event.framework = positional(call, 0), frameworks.backward_framework(R.ENGINE)
    else:
        handed = keyword(call, "loss") or (positional(call, 0) if _built_object(name, site.stmt.scope) else None)
        # `booster.backward(loss=l / k, optimizer=opt)`: an object's backward takes the loss as an
        # argument; a tensor's `backward` has no `loss=` (its first argument is a gradient)
        event.tensor = handed if handed is not None else receiver
    return event if event.tensor is not None else None


_TENSOR_BUILDERS = {"Variable", "Tensor", "FloatTensor", "Parameter"}


def _steps_itself(name: Optional[str], call: ast.Call, scope: Scope) -> bool:
    """`model.backward(loss)` and `model.step()` on one object in the function: an engine that
    runs backward and step itself (a DeepSpeed engine handed in as `model`). A tensor has no
    `step`, and a project class's own `self.backward()` is its method, not an engine's."""
    if name is None or name in {"self", "cls"} or len(call.args) != 1 or call.keywords:
        return False
    return any(
        isinstance(site.call.func, ast.Attribute) and site.call.func.attr == "step"
        and not site.call.args and not site.call.keywords and dotted(site.call.func.value) == name
        for site in scope.calls
    )


def _built_object(name: Optional[str], scope: Scope) -> bool:
    """`booster = Booster(plugin=plugin)`: the name holds an instance of a class, no tensor."""
    if name is None:
        return False
    definitions = [d for current in scope.sight() for d in current.definitions(name)]
    return bool(definitions) and all(
        d.kind == "assign" and isinstance(d.value, ast.Call) and class_like(built := dotted(d.value.func))
        and last_part(built) not in _TENSOR_BUILDERS
        for d in definitions
    )


def _library_training_step(site: CallSite, resolver: Resolver) -> Optional[Event]:
    """`self.training_step(model, inputs)`, resolved to no project function, in a class built on
    transformers' Trainer (a copied and edited `train()` loop): the library's backward."""
    receiver, method = method_of(site.call)
    if method != transformers.TRAINING_STEP or not (isinstance(receiver, ast.Name) and receiver.id == "self"):
        return None
    cls = enclosing_class(site.stmt.scope)
    if cls is None or cls.class_node is None or not resolver.library_bases(cls.class_node) & transformers.TRAINER_CLASSES:
        return None
    return Event(BACKWARD, site.stmt, site.call, "self", helper="transformers.Trainer.training_step")


def classify(site: CallSite, roles: R.Roles) -> Optional[Event]:
    call = site.call
    receiver, method = method_of(call)
    name = dotted(receiver) if receiver is not None else None
    role = roles.role(name)
    if method in {"backward", lightning.MANUAL_BACKWARD}:
        return _backward(site, roles)
    if role is not None and role in frameworks.GRADIENT_METHODS and frameworks.GRADIENT_METHODS[role][0] == method:
        # `tape.gradient(loss, vars)`: a backward that hands the gradients back.
        tensor = positional(call, 0) or keyword(call, "target")
        framework = frameworks.GRADIENT_METHODS[role][1]
        return Event(BACKWARD, site.stmt, call, name, tensor=tensor, framework=framework) if tensor is not None else None
    if receiver is not None and (call.args or call.keywords) and (
        method in frameworks.STEP_METHODS and (role == R.OPTIMIZER or role is None and name not in {None, "self", "cls"})
        or method in keras.OPTIMIZER_ONLY_STEP_METHODS and role == R.OPTIMIZER
    ):
        # `optimizer.apply_gradients(zip(grads, vars))`; not a class's own `self.apply_gradients()` helper.
        return Event(STEP, site.stmt, call, name, optimizer=name)
    if frameworks.STEP_FUNCTIONS and roles.canonical(dotted(call.func) or "") in frameworks.STEP_FUNCTIONS:
        target = positional(call, 0) or keyword(call, "optimizer")
        stepped = dotted(target) if target is not None else None
        return Event(STEP, site.stmt, call, stepped, optimizer=stepped) if stepped is not None else None
    if method == "step" and receiver is not None:
        if role == R.SCALER:
            target = positional(call, 0)
            return Event(STEP, site.stmt, call, name, scaler=name,
                         optimizer=dotted(target) if target is not None else None)
        if role in {R.OPTIMIZER, R.ENGINE}:
            engine = Framework.DEEPSPEED if role == R.ENGINE else None  # the engine keeps its own window
            return Event(STEP, site.stmt, call, name, optimizer=name, framework=engine)
        if role == R.SCHEDULER:
            return Event(SCHED, site.stmt, call, name)
        if isinstance(receiver, ast.Call) and method_of(receiver)[1] == lightning.OPTIMIZERS_GETTER:
            return Event(STEP, site.stmt, call, None)
        return None
    if method == "zero_grad" and role != R.SCHEDULER:
        return Event(ZERO, site.stmt, call, name)
    if method in _CLIP_NAMES or (method is not None and roles.canonical(method).rsplit(".", 1)[-1] in _CLIP_NAMES):
        self_unscaling = role in frameworks.SELF_UNSCALING_ROLES or method in frameworks.SELF_UNSCALING_METHODS
        return Event(CLIP, site.stmt, call, name, self_unscaling=self_unscaling)
    if method == "unscale_" and receiver is not None:
        target = positional(call, 0)
        return Event(UNSCALE, site.stmt, call, name, scaler=name,
                     optimizer=dotted(target) if target is not None else None)
    if method == "update" and role == R.SCALER and not call.args and not call.keywords:
        # `scaler.update(new_scale)` sets the scale by hand: no inf checks are read, nothing raises
        return Event(UPDATE, site.stmt, call, name, scaler=name)
    return None


def _grad_set_to_none(scope: Scope) -> list[Event]:
    """`p.grad = None` zeroes like zero_grad(set_to_none=True)."""
    found = []
    for name, definitions in scope.defs.items():
        if not name.endswith(".grad"):
            continue
        for definition in definitions:
            value = definition.value
            if definition.kind == "assign" and is_constant(value, None):
                found.append(Event(ZERO, definition.stmt, None, name))
    return found


def lightning_manual(collected: Collected) -> bool:
    """`self.automatic_optimization = False` somewhere in the file."""
    return any(
        name.endswith(lightning.MANUAL_SWITCH)
        and any(is_constant(d.value, False) for d in definitions)
        for scope in collected.scopes
        for name, definitions in scope.defs.items()
    )


def _lightning_returns(scope: Scope, manual: bool) -> list[Event]:
    """Under automatic optimisation Lightning runs backward on what training_step returns."""
    if manual or not scope.is_lightning_training_step:
        return []
    return [Event(BACKWARD, stmt, None, tensor=value, framework=Framework.LIGHTNING_AUTO) for value, stmt in scope.returns]


def _accumulator_resets(collected: Collected) -> dict[int, list[Event]]:
    """Accumulator variables set back to zero (`acc[i].assign(tf.zeros_like(v))`): where gradients
    are added up by hand, this is the zeroing. (Keyed by id(scope), like the other events.)"""
    found: dict[int, list[Event]] = {}
    for stmt, call in accumulators.resets(collected):
        found.setdefault(id(stmt.scope), []).append(Event(ZERO, stmt, call, None, framework=Framework.KERAS))
    return found


def direct_events(collected: Collected, roles: R.Roles) -> dict[int, list[Event]]:
    """The events each scope performs itself (keyed by id(scope))."""
    direct: dict[int, list[Event]] = {}
    manual = lightning_manual(collected)
    resets = _accumulator_resets(collected)
    for value, stmt in accumulators.compiled_losses(collected):  # Keras differentiates a compiled loss itself
        resets.setdefault(id(stmt.scope), []).append(Event(BACKWARD, stmt, None, tensor=value, framework=Framework.KERAS))
    for scope in collected.scopes:
        events = [e for e in (classify(site, roles) for site in scope.calls) if e is not None]
        events.extend(_grad_set_to_none(scope))
        events.extend(_lightning_returns(scope, manual))
        events.extend(resets.get(id(scope), []))
        direct[id(scope)] = events
    return direct


def scope_events(scope: Scope, direct: dict[int, list[Event]], resolver: Resolver) -> list[Event]:
    """A scope's own events, and, in a function with a loop, at each call of a resolved function
    the events that function performs, itself or further down."""
    events = list(direct[id(scope)])
    if not scope.loops:
        # What a call does matters only to a loop of the caller (its windows, steps, backward
        # passes per iteration); in a function without one, only its own events are read.
        return events
    for site in scope.calls:
        callee = resolver.resolve(site.call, scope)
        if callee is None:
            library = _library_training_step(site, resolver)
            events.extend([library] if library is not None else [])
            continue
        if callee.scope is scope:
            continue
        kinds = resolver.kinds(callee)
        # `self.optimizer.step()` on a project wrapper: what its method does replaces what the
        # call's name suggests, when the method does that itself (it may gate or skip it).
        events = [e for e in events if e.call is not site.call or e.kind not in kinds]
        for kind in sorted(kinds, key=lambda k: k.value):
            events.append(Event(kind, site.stmt, site.call, None, helper=callee.scope.name, callee=callee))
    events.sort(key=lambda e: e.order)
    return events


def retains_graph(event: Event) -> bool:
    return is_true(event.retain_graph)
