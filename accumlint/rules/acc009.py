"""ACC009 ddp-sync-every-micro-step: DistributedDataParallel all-reduces on every micro-step."""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, cast

import ast
import re

from accumlint.analysis import ModuleFacts, lifetimes
from accumlint.analysis.facts import ScopeFacts
from accumlint.analysis.calls import AnalysedModule, analysed, bound_arguments, enclosing_class
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.collect import WITHS, CallSite, Collected, Definition, Loop, Scope, Stmt
from accumlint.analysis.events import BACKWARD, Event
from accumlint.analysis.handoff import Handoff, Holder, call_arguments, handed_names, handoffs, holders
from accumlint.analysis.passes import backward_each_pass
from accumlint.analysis.reach import reached
from accumlint.analysis.pinned import pinned_by
from accumlint.analysis.windows import Window
from accumlint.analysis.exprs import dotted, is_true, keyword, last_part, literal_element, method_of, positional, without_module_moves
from accumlint.analysis.roles import Roles
from accumlint import frameworks
from accumlint.frameworks import Role, accelerate, ddp, fabric
from accumlint.model import Violation
from accumlint.rules.common import place_in
from accumlint.rules.meta import FixSafety

CODE = "ACC009"
NAME = "ddp-sync-every-micro-step"
SUMMARY = "DistributedDataParallel all-reduces on every micro-step"
FIX: FixSafety = None
# Any sync control in the file means the author manages gradient sync (a context kept in a
# variable, a helper that returns it, FSDP, Fabric, Accelerate): we cannot follow them all, so
# stay silent.
_SYNC_CONTROLS = frameworks.SYNC_CONTROLS
_MAX_HOPS = 3  # calls that hand the model on, after the first, before its loop
_PARALLEL_WORDS = re.compile(r"ddp|fsdp|distributed|parallel", re.IGNORECASE)
# `accumulate` is a sync control only as Accelerate's `accelerator.accumulate(model)`: a variable
# called `accumulate` holds a step count (YOLO), and `coco_eval.accumulate()` sums metrics.
_CALL_ONLY_CONTROLS = frozenset({accelerate.ACCUMULATE_CONTEXT})
# `accelerator.prepare(model)` and `fabric.setup(model)` wrap the model in DDP on a multi-process launch.
_PREPARE_METHODS = accelerate.PREPARE_METHODS | fabric.SETUP_METHODS
_DDP_LAUNCH_CLASSES = frozenset({"DistributedDataParallelKwargs", "DDPStrategy"})


def _sync_control_call(call: ast.Call) -> bool:
    method = method_of(call)[1]
    if method in _CALL_ONLY_CONTROLS:
        return bool(call.args or call.keywords)
    return method in _SYNC_CONTROLS


def _scope_manages_sync(scope: Scope) -> bool:
    """The function enters `no_sync()`, sets the sync flag or calls FSDP's setter."""
    named = _SYNC_CONTROLS - _CALL_ONLY_CONTROLS
    if any(name.rsplit(".", 1)[-1] in named for name in scope.defs):
        return True
    if any(o.name.rsplit(".", 1)[-1] in named for o in scope.occurrences):
        return True
    return any(_sync_control_call(site.call) for site in scope.calls)


def _manages_sync(collected: Collected) -> bool:
    return any(_scope_manages_sync(scope) for scope in collected.scopes)


def _sync_managed_in(module: AnalysedModule, facts: ModuleFacts) -> bool:
    """Sync control anywhere in a module of the project (asked once per module and check)."""
    known = facts.cached("acc009_sync_managed", dict)
    if id(module) not in known:
        known[id(module)] = _manages_sync(module.collected)
    return known[id(module)]


def _backward_every_micro_step(
    window: Window, events: list[Event], facts: ModuleFacts, models: Iterable[str] = ()
) -> Optional[Event]:
    """The first backward that runs on every micro-step of the window: the scope's own, or one
    inside a function it calls (a loss scaler's `__call__`) whose modules control no sync. Not
    `model.backward(loss)` of the DDP model's own name: a DDP module has no `backward`, so that
    branch runs another engine (`if args.deepspeed: model.backward(loss)`)."""
    engines = set(models)
    for event in events:
        if event.kind != BACKWARD or event.call is None:
            continue
        if isinstance(event.call.func, ast.Attribute) and dotted(event.call.func.value) in engines:
            continue
        if not (window.every_micro_step(event.stmt) or window.backward_in_call(event)):
            continue
        if event.callee is None or not _helpers_manage_sync(event, facts):
            return event
    return None


def _engine_backward(event: Event, facts: ModuleFacts) -> bool:
    """`engine.backward(loss)` of a DeepSpeed engine (its role, or a name that says so): the
    branch that runs another engine, not the DDP model's backward."""
    if event.kind != BACKWARD or event.call is None or not isinstance(event.call.func, ast.Attribute):
        return False
    receiver = dotted(event.call.func.value) or ""
    return facts.roles.role(receiver) == Role.ENGINE or "deepspeed" in receiver.lower()


def _helpers_manage_sync(call: Event, facts: ModuleFacts) -> bool:
    """The backward runs inside called functions (a loss scaler's `__call__`) of a module that
    controls sync itself, or none is found."""
    chain = list(reached(call, BACKWARD))
    modules = {id(m): m for m in [r.module for r in chain] + [c.callee.module for r in chain for c in r.calls if c.callee]}
    return not chain or any(_sync_managed_in(m, facts) for m in modules.values())


def _runs_the_model(model: str, inside: list[Stmt], scope: Scope, facts: ModuleFacts) -> bool:
    """The statements read the model, themselves or in a closure they call (`loss = _forward()`
    with `def _forward(): return loss_fn(model(x), y)` beside the loop)."""
    def is_model(name: str) -> bool:
        return name == model or name.startswith(model + ".")

    def reads(occurrences) -> bool:
        return any(is_model(o.name) for o in occurrences)

    if reads(o for o in scope.occurrences if o.stmt in inside):
        return True
    for site in scope.calls:
        if site.stmt in inside:
            if is_model(dotted(site.call.func) or ""):
                return True  # `self.model(x)`: a called attribute is a call, not an occurrence
            callee = facts.analysed.resolver.resolve(site.call, scope)
            if callee is not None and callee.scope.parent is scope and reads(callee.scope.occurrences):
                return True
    return False


def _no_sync_model(call: ast.Call, scope: Scope, facts: ModuleFacts) -> Optional[str]:
    """The model whose `no_sync()` the context enters: `model.no_sync()` itself, or a project
    function that returns it (`def maybe_no_sync(step): return model.no_sync() if ... else
    ExitStack()`; a parameter receiver is read as the call's argument)."""
    receiver, method = method_of(call)
    callee = facts.analysed.resolver.resolve(call, scope)
    if callee is None:  # DDP's own `model.no_sync()`, not a project function of that name
        return dotted(receiver) if receiver is not None and method == ddp.NO_SYNC_CONTEXT else None
    for returned, _ in callee.scope.returns:
        for part in ast.walk(returned):
            inner = method_of(part) if isinstance(part, ast.Call) else (None, None)
            if inner[1] != ddp.NO_SYNC_CONTEXT or inner[0] is None:
                continue
            name = dotted(inner[0])
            if name in callee.scope.params:
                argument = (bound_arguments(call, callee) or {}).get(name)
                return dotted(argument) if argument is not None else None
            return name
    if _switches_sync_off(callee.scope):
        return ""  # the helper picks the modules itself (`for m in self.modules.values()`)
    return None


def _switches_sync_off(scope: Scope) -> bool:
    """A project context manager that turns DDP's sync off while its block runs: it sets the
    sync flag of modules (`module.require_backward_grad_sync = False`) or enters their
    `no_sync()`, around a `yield`."""
    if not any(isinstance(node, ast.Yield) for stmt in scope.stmts for node in ast.walk(stmt.node)):
        return False
    flag = "." + ddp.SYNC_FLAG
    if any(name.endswith(flag) for name in scope.defs):
        return True
    return any(method_of(site.call)[1] == ddp.NO_SYNC_CONTEXT for site in scope.calls)


def _backward_only_no_sync(facts: ModuleFacts, sf: ScopeFacts) -> Iterator[Violation]:
    """`with model.no_sync(): loss.backward()` with the forward outside: DDP read the flag in forward."""
    for header in sf.scope.stmts:
        node = header.node
        if not isinstance(node, WITHS) or not header.is_statement:
            continue
        for item in node.items:
            if not isinstance(item.context_expr, ast.Call):
                continue
            model = _no_sync_model(item.context_expr, sf.scope, facts)
            if model is None:
                continue
            inside = [s for s in sf.scope.stmts if s.within(node)]
            backward = [e for e in sf.events if e.kind == BACKWARD and e.stmt in inside]
            if not backward:
                continue
            if model:
                forward_outside = not _runs_the_model(model, inside, sf.scope, facts)
            else:  # modules unknown: only a block that holds nothing but the backward shows it
                forward_outside = {id(s) for s in inside} <= {id(e.stmt) for e in backward}
            if not forward_outside or (model and _forward_under_no_sync_before(model, header, sf.scope, facts)):
                continue
            context = f"`{facts.source.segment(item.context_expr)}`"
            if not model:
                what = f"{context} turns off DDP's sync around"
            elif context == f"`{model}.no_sync()`":
                what = f"`{model}.no_sync()` wraps"
            else:
                what = f"{context} enters `{model}.no_sync()` around"
            yield Violation(
                CODE,
                f"{what} only the backward pass: DDP decides to sync during the forward, so every "
                f"micro-step still all-reduces; put the forward inside it too",
                node,
            )


def _accumulate_leaves_out(facts: ModuleFacts, sf: ScopeFacts) -> Iterator[Violation]:
    """`with accelerator.accumulate(unet):` over the micro-steps while another model the same
    Accelerator prepared for DDP (`text_encoder`, trained beside it) runs in the block:
    `accumulate()` enters `no_sync()` only for the models it is given, so the other one
    all-reduces its gradients on every micro-step."""
    for site in sf.scope.calls:
        receiver, method = method_of(site.call)
        owner = dotted(receiver) if receiver is not None else None
        if not site.context_manager or method != accelerate.ACCUMULATE_CONTEXT or owner is None:
            continue
        if facts.roles.role(owner) != Role.ACCELERATOR or site.stmt.loop is None:
            continue
        named = _accumulated_models(site.call, site.stmt)
        if named is None:
            continue
        block = site.stmt.node
        inside = [s for s in sf.scope.stmts if s.within(block)]
        left_out: list[tuple[str, Definition]] = []
        for model in sorted(_ddp_models(facts) - named):
            prepared = next((
                d for scope in sf.scope.binding_scopes(model) for d in scope.definitions(model)
                if _preparer(d, facts) == owner
            ), None)
            if prepared is None or not _runs_the_model(model, inside, sf.scope, facts):
                continue
            if not _in_train_mode(model, site.stmt, sf.scope) or _only_graph_free_forwards(model, site.stmt.loop, sf.scope, block):
                continue  # a model kept in eval mode, or run under no_grad or detached: no gradient of its own to sync
            left_out.append((model, prepared))
        if left_out:
            models = ", ".join(f"`{model}`" for model, _ in left_out)
            lines = ", ".join(str(n) for n in sorted({getattr(prepared.stmt.node, "lineno", 0) for _, prepared in left_out}))
            yield Violation(
                CODE,
                f"`{facts.source.segment(site.call)}` enters `no_sync()` only for the models it is given: "
                f"{models}, prepared by `{owner}.prepare` (line {lines}) and trained in this block, "
                f"{'all-reduces its' if len(left_out) == 1 else 'all-reduce their'} gradients on every "
                f"micro-step; pass {'it' if len(left_out) == 1 else 'them'} to `accumulate` too",
                site.call,
            )


def _in_train_mode(model: str, header: Stmt, scope: Scope) -> bool:
    """The function puts the model in training mode (`model.train()`), and no `model.eval()` on
    the way into the block undoes it (a discriminator kept in eval mode while the generator trains)."""
    trained = False
    for site in scope.calls:
        receiver, method = method_of(site.call)
        if receiver is None or dotted(receiver) != model or method not in {"train", "eval"}:
            continue
        if method == "train" and not (site.call.args and not is_true(site.call.args[0])):
            trained = True
        elif header.loop is not None and header.loop.contains(site.stmt) and site.stmt.order < header.order and site.stmt.compatible(header):
            return False
    return trained


def _accumulated_models(call: ast.Call, at: Stmt) -> Optional[set[str]]:
    """The models `accumulate(...)` is given: names, a list or tuple of names, or a list named in
    sight with what is appended to it or extended by (`models_to_accumulate = [unet]`, then
    `models_to_accumulate.append(text_encoder)`); None when the code does not show them all."""
    named: set[str] = set()
    for argument in call.args:
        value = argument.value if isinstance(argument, ast.Starred) else argument
        name = dotted(value)
        if isinstance(value, (ast.List, ast.Tuple)):
            elements = [dotted(e) for e in value.elts]
            if None in elements:
                return None
            named.update(e for e in elements if e is not None)
        elif name is None:
            return None
        else:
            listed = _list_in_sight(name, at)
            if listed is None and isinstance(argument, ast.Starred):
                return None  # `*models` of a list the code builds out of sight
            named |= listed if listed is not None else {name}
    return named if named and not call.keywords else None


def _list_in_sight(name: str, at: Stmt) -> Optional[set[str]]:
    """The names a list built here holds: its display, then every `append(x)`/`extend([...])`
    on it in this function (None when it is built some other way or holds something else)."""
    base, updates = reaching(name, at.scope, at.order)
    if base is None or updates or base.kind != "assign" or not isinstance(base.value, (ast.List, ast.Tuple)):
        return None
    held = [dotted(e) for e in base.value.elts]
    for site in at.scope.calls:
        receiver, method = method_of(site.call)
        if receiver is None or dotted(receiver) != name or method not in {"append", "extend"}:
            continue
        for argument in site.call.args:
            items = argument.elts if method == "extend" and isinstance(argument, (ast.List, ast.Tuple)) else [argument]
            if method == "extend" and not isinstance(argument, (ast.List, ast.Tuple)):
                return None
            held.extend(dotted(item) for item in items)
    return None if None in held else {h for h in held if h is not None}


def _forward_under_no_sync_before(model: str, header: Stmt, scope: Scope, facts: ModuleFacts) -> bool:
    """`with model.no_sync(): outputs = model(**inputs)` earlier in the same loop iteration (on
    the same non-final micro-steps): the forward was already run with sync off, and entering
    `no_sync()` again around the backward is redundant, not a backward-only switch."""
    loop = header.loop
    for other in scope.stmts:
        node = other.node
        if other is header or not isinstance(node, WITHS) or not other.is_statement or other.order > header.order:
            continue
        if loop is None or other.loop is not loop:
            continue
        for item in node.items:
            if isinstance(item.context_expr, ast.Call) and _no_sync_model(item.context_expr, scope, facts) == model:
                if _runs_the_model(model, [s for s in scope.stmts if s.within(node)], scope, facts):
                    return True
    return False


def _flag_after_forward(sf: ScopeFacts) -> Iterator[Violation]:
    """`model.require_backward_grad_sync = last` set after the micro-step's forward: DDP reads
    the flag in the forward, so each micro-step follows the setting of the one before."""
    flag = "." + ddp.SYNC_FLAG
    for name, definitions in sf.scope.defs.items():
        if not name.endswith(flag):
            continue
        model = name[: -len(flag)]
        for definition in definitions:
            loop = definition.stmt.loop
            if definition.kind != "assign" or loop is None:
                continue
            forwards = [
                site.stmt.order for site in sf.scope.calls
                if dotted(site.call.func) == model and loop.contains(site.stmt)
            ]
            backward = any(
                e.kind == BACKWARD and loop.contains(e.stmt) and e.order > definition.order for e in sf.events
            )
            if forwards and backward and max(forwards) < definition.order:
                yield Violation(
                    CODE,
                    f"`{name}` is set after this micro-step's forward pass, but DDP reads it during the forward: "
                    f"each micro-step follows the setting of the one before, so only the first micro-step of a "
                    f"window all-reduces and the ranks step with different gradients; set it before the forward",
                    definition.stmt.node,
                )


def _others_too(used: list[str]) -> str:
    """The other DDP models the loop runs forward with gradients (a GAN's discriminator in the
    generator's loop): they all-reduce too, so the advice names them."""
    others = [f"`{name}`" for name in dict.fromkeys(used) if name != used[0]]
    if not others:
        return ""
    return f"; the same for {', '.join(others)}, which also runs forward with gradients in this loop"


def _foreign_wrapper(facts: ModuleFacts, models: set[str]) -> Optional[str]:
    """The package of the DDP class the models were built with, when none of them is torch's
    (apex's DistributedDataParallel has no `no_sync()`)."""
    origins: set[str] = set()
    for scope in facts.collected.scopes:
        for name in models:
            for definition in scope.definitions(name):
                if _library_wrapper(definition.value, facts.roles):  # not a project helper or subclass
                    assert isinstance(definition.value, ast.Call)
                    head = (dotted(definition.value.func) or "").partition(".")[0]
                    origin = facts.collected.imports.get(head)
                    if origin is not None:
                        origins.add(origin.split(".", 1)[0])
    if origins and "torch" not in origins:
        return sorted(origins)[0]
    return None


def _wrapping_in_sight(name: str, scope: Scope, facts: ModuleFacts) -> Optional[Definition]:
    """The DDP wrapping of `name` that is the object this scope uses: made in this function or
    one around it, or on `self` in a method of the same class (not the same name in another
    function, where the parameter may be the bare model)."""
    for candidate in scope.binding_scopes(name):
        found = [d for d in candidate.definitions(name) if _holds_wrapping(d, candidate, facts)]
        if found:
            # `if apex: model = ApexDDP(model)` / `else: model = NativeDDP(model)`: name torch's, whose
            # `no_sync()` the advice is about (apex's wrapper has none)
            return next((d for d in found if not _apex_wrapping(d, facts)), found[0])
    return None


def _apex_wrapping(definition: Definition, facts: ModuleFacts) -> bool:
    value = definition.value
    return isinstance(value, ast.Call) and facts.roles.canonical(dotted(value.func) or "").startswith("apex.")


def _holds_wrapping(definition: Definition, scope: Scope, facts: ModuleFacts, depth: int = 0) -> bool:
    """The definition gives its name a DDP model: `DDP(model)`, a project helper that returns
    one (also as an element of the tuple it returns: `model, opt = setup_for_distributed(...)`),
    a framework's `prepare`, or a name that held one just before (`model = DDP(model)`, then
    `self.model = model`)."""
    if definition.kind not in {"assign", "unpack"}:
        return False
    if _preparer(definition, facts) is not None:
        return True
    value = definition.bound_value()
    if value is None and definition.kind == "unpack":
        return _wraps(definition.value, scope, facts, definition.name, definition.index)
    if _wraps(value, scope, facts, definition.name) or _wrapped_when(value, facts):
        return True
    if not isinstance(value, ast.Name) or depth >= 2:
        return False
    earlier = [
        d for d in scope.definitions(value.id) if d.order < definition.order and d.stmt.compatible(definition.stmt)
    ]
    return bool(earlier) and _holds_wrapping(earlier[-1], scope, facts, depth + 1)


def _wrapped_when(value: Optional[ast.expr], facts: ModuleFacts) -> bool:
    """`DDP(net, ...) if args.distributed else net`: the model, wrapped when the run is
    distributed, as `if args.distributed: model = DDP(net)` would make it. Also with the model moved
    on both sides (`DDP(net.cuda()) if d else net.cuda()`), handed as `module=net`, or with `None`
    as the other choice (`ddp_model = DDP(net) if d else None`: the DDP model when there is one)."""
    if not isinstance(value, ast.IfExp):
        return False
    for wrapped, bare in ((value.body, value.orelse), (value.orelse, value.body)):
        if not (_builds_wrapper(wrapped, facts.analysed) and isinstance(wrapped, ast.Call)):
            continue
        if _no_value(bare):
            return True
        inner = _unmoved(positional(wrapped, 0) or keyword(wrapped, "module"))
        if inner is not None and inner == _unmoved(bare):
            return True
    return False


def _unmoved(value: Optional[ast.expr]) -> Optional[str]:
    """The model a value is, past the moves and casts on it (`net.cuda()`, `net.to(device)` -> net)."""
    return dotted(without_module_moves(value)) if value is not None else None


def _preparer(definition: Definition, facts: ModuleFacts) -> Optional[str]:
    """The Accelerator or Fabric whose `prepare(model, ...)` / `setup(model, ...)` gave this name
    a model: DistributedDataParallel when launched on several processes. Not in a module that
    uses DeepSpeed, whose engine reduces by its own accumulation settings, and not an element
    that is an optimizer, a scheduler or a loader."""
    roles = facts.roles
    call = definition.value
    if roles.uses_deepspeed or not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    if call.func.attr not in _PREPARE_METHODS or definition.name not in roles.prepared:
        return None
    owner = dotted(call.func.value)
    if roles.role(owner) not in {Role.ACCELERATOR, Role.FABRIC} or roles.role(definition.name) is not None:
        return None
    argument = positional(call, definition.index[0] if definition.index else 0)
    if argument is None or roles.role(dotted(argument)) is not None:
        return None
    return owner if owner is not None and _built_for_ddp(owner, facts) else None


def _built_for_ddp(owner: str, facts: ModuleFacts) -> bool:
    """The module builds its Accelerator or Fabric for a DDP launch in the code itself:
    `DistributedDataParallelKwargs` for an Accelerator, a DDP strategy for a Fabric. Otherwise the
    launch config decides (one process, DeepSpeed, FSDP), and the code shows no DDP to report on."""
    launches_ddp = facts.cached(
        "acc009_launches_ddp",
        lambda: any(_names_ddp(site.call, facts.roles) for scope in facts.collected.scopes for site in scope.calls),
    )
    return launches_ddp and any(
        isinstance(d.value, ast.Call) for scope in facts.collected.scopes for d in scope.definitions(owner)
    )


def _names_ddp(call: ast.Call, roles: Roles) -> bool:
    """`DistributedDataParallelKwargs(...)`, `DDPStrategy(...)`, `Fabric(strategy="ddp")`, also a
    `partial(DistributedDataParallelKwargs, ...)` that builds one later."""
    if last_part(roles.canonical(dotted(call.func))) in _DDP_LAUNCH_CLASSES:
        return True
    if last_part(roles.canonical(dotted(call.func))) == "partial" and call.args:
        if last_part(roles.canonical(dotted(call.args[0]))) in _DDP_LAUNCH_CLASSES:
            return True
    strategy = keyword(call, "strategy")
    return (
        isinstance(strategy, ast.Constant) and isinstance(strategy.value, str)
        and strategy.value.split("_", 1)[0] == "ddp"  # "ddp", "ddp_spawn", "ddp_find_unused_parameters_true"
    )


def _library_wrapper(value: Optional[ast.expr], roles: Roles) -> bool:
    """`DDP(model)` of a library's DDP class (torch's, apex's)."""
    return isinstance(value, ast.Call) and roles.canonical(dotted(value.func)).rsplit(".", 1)[-1] in ddp.WRAPPERS


def _builds_wrapper(value: Optional[ast.expr], module: AnalysedModule) -> bool:
    """`DDP(model)`: a library's wrapper, or a project class built on one (`class DDP(DistributedDataParallel)`,
    here or imported from another module of the project)."""
    if not isinstance(value, ast.Call):
        return False
    name = dotted(value.func)
    if name is None:
        return _library_wrapper(value, module.roles)
    # decided by the called name alone: asked for every call-made definition, worked out once per name
    memo = cast("dict[str, bool]", module.collected.memo.setdefault("acc009.wrapper_names", {}))
    if name not in memo:
        memo[name] = module.resolver.built_on(name, ddp.WRAPPERS)
    return bool(memo[name])


def _wraps(
    value: Optional[ast.expr], scope: Scope, facts: ModuleFacts, target: str = "", index: tuple[int, ...] = ()
) -> bool:
    """`DDP(model, ...)`, or a call of a project function whose every return is one, built in the
    `return` or in the name it returns (`model = setup_model(model)` with `return DDP(model, ...)`
    or `model = DDP(model); return model`), in a module that builds a wrapper. The function is
    read when its name speaks of parallelism, or when the name it is assigned to holds a model in a
    module with an accumulation window (resolving every call of a whole repository would cost more
    than the rule is worth)."""
    if _builds_wrapper(value, facts.analysed):
        return True
    if not isinstance(value, ast.Call):
        return False
    resolver = facts.analysed.resolver
    library = resolver.library_name(dotted(value.func) or "")
    if library is not None and last_part(library) in ddp.WRAPPERS:
        return True  # `ext_dist.DDP(...)`: torch's class, imported through a project module
    if not _PARALLEL_WORDS.search(last_part(dotted(value.func))) and not (
        _accumulates(facts) and lifetimes.is_model(target, _model_names(facts))
    ):
        return False
    callee = facts.analysed.resolver.resolve(value, scope)
    if callee is None or not callee.scope.returns or not _builds_wrappers(callee.module):
        return False
    returned_values = [
        (literal_element(returned, index) if index else returned, stmt) for returned, stmt in callee.scope.returns
    ]
    # an early `return model, None` on a run with no DDP leaves no model in that slot
    found = [value is not None and _returns_wrapper(value, stmt, callee.module) for value, stmt in returned_values]
    return any(found) and all(
        wraps or _no_value(value) for wraps, (value, _) in zip(found, returned_values)
    )


def _accumulates(facts: ModuleFacts) -> bool:
    """Some loop of the module gates its step to a window (asked once per definition: cached)."""
    return facts.cached("acc009_accumulates", lambda: any(sf.windows for sf in facts.scopes))


def _model_names(facts: ModuleFacts) -> set[str]:
    return facts.cached("acc009_model_names", lambda: lifetimes.model_objects(facts))


def _builds_wrappers(module: AnalysedModule) -> bool:
    """Some call in the module builds a DDP/FSDP wrapper (worked out once per module)."""
    memo = module.collected.memo
    if "acc009.builds_wrappers" not in memo:
        memo["acc009.builds_wrappers"] = any(
            _builds_wrapper(site.call, module) for scope in module.collected.scopes for site in scope.calls
        )
    return bool(memo["acc009.builds_wrappers"])


def _returns_wrapper(returned: ast.expr, stmt: Stmt, module: AnalysedModule) -> bool:
    """`return DDP(model)`, or `return model` after `model = DDP(model)` in that function; also
    after `if d: model = DDP(net)` / `else: model = None` (the DDP model when there is one)."""
    if _builds_wrapper(returned, module):
        return True
    if not isinstance(returned, ast.Name):
        return False
    definitions = [d for d in stmt.scope.definitions(returned.id) if d.order < stmt.order and d.stmt.compatible(stmt)]
    # the last definition on each branch: one that a later definition on the same path may
    # overwrite is left out (with `x = None; if d: x = DDP(m)` only the wrapping is read)
    last = [d for d in definitions if not any(o.order > d.order and o.stmt.compatible(d.stmt) for o in definitions)]
    if not last or any(d.kind != "assign" for d in last):
        return False
    wrappers = [d for d in last if _builds_wrapper(d.value, module)]
    wrapped = {_unmoved(positional(d.value, 0) or keyword(d.value, "module")) for d in wrappers if isinstance(d.value, ast.Call)}
    others = [d for d in last if d not in wrappers]
    # the other branches leave no model (`None`) or the bare model the wrapper wraps
    return bool(wrappers) and all(_no_value(d.value) or _unmoved(d.value) in wrapped for d in others)


def _no_value(value: Optional[ast.expr]) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _ddp_models(facts: ModuleFacts) -> set[str]:
    """The names that hold a DDP/FSDP wrapping somewhere in the module."""
    def find() -> set[str]:
        found = set(facts.roles.ddp_models)
        for scope in facts.collected.scopes:
            for name, definitions in scope.defs.items():
                if name not in found and any(_holds_wrapping(d, scope, facts) for d in definitions):
                    found.add(name)
        return found

    return facts.cached("acc009_models", find)


def _subject(facts: ModuleFacts, wrapping: Optional[Definition]) -> str:
    owner = _preparer(wrapping, facts) if wrapping is not None else None
    if owner is None:
        return "the DistributedDataParallel model"
    return f"the model that `{owner}` prepared (DistributedDataParallel on a multi-process launch)"


def _advice(facts: ModuleFacts, model: str, where: str = "", wrapping: Optional[Definition] = None) -> str:
    owner = _preparer(wrapping, facts) if wrapping is not None else None
    if owner is not None and facts.roles.role(owner) == Role.FABRIC:
        return (
            f"run the forward and backward of non-final micro-steps{where} under "
            f"`{owner}.no_backward_sync({model}, enabled=...)`"
        )
    if owner is not None:
        accumulate = f"run each micro-step under `{owner}.accumulate({model})`"
        if owner in facts.roles.accelerator_gas and not facts.roles.accumulating_accelerator(owner):
            # built without accumulation steps, `accumulate()` syncs on every micro-step
            accumulate = f"build `{owner}` with `gradient_accumulation_steps` set to the window and {accumulate}"
        return f"wrap the forward and backward of non-final micro-steps{where} in `{owner}.no_sync({model})`, or {accumulate}"
    foreign = _foreign_wrapper(facts, {model})
    if foreign is not None:
        return (
            f"{foreign}'s DistributedDataParallel has no `no_sync()`: switch its all-reduce off on "
            f"non-final micro-steps by hand{where} (apex: `{model}.disable_allreduce()`, and "
            f"`{model}.enable_allreduce()` before the last backward of the window)"
        )
    return f"wrap the forward and backward of non-final micro-steps{where} in `{model}.no_sync()`"


def _with_aliases(name: str, scope: Scope) -> set[str]:
    """`name` and the local names bound to it alone (`model = self.model`)."""
    return {name} | {
        alias for alias, definitions in scope.defs.items()
        if all(d.kind == "assign" and d.value is not None and dotted(d.value) == name for d in definitions)
    }


def _read_every_micro_step(name: str, scope: Scope, window: Window) -> bool:
    """The micro-step loop uses the model under `name` (or a local name bound to it)."""
    names = _with_aliases(name, scope)
    return any(
        o.name in names and not o.write and window.micro_loop.contains(o.stmt) for o in scope.occurrences
    ) or any(dotted(site.call.func) in names and window.micro_loop.contains(site.stmt) for site in scope.calls)


def _called_in_micro_loop(name: str, scope: Scope, window: Window) -> bool:
    """The micro-step loop calls the object under `name` (or a local name bound to it) with
    autograd on: a call under `no_grad` (an EMA copy's forward) builds no graph to reduce."""
    names = _with_aliases(name, scope)
    return any(
        dotted(site.call.func) in names and window.micro_loop.contains(site.stmt) and not site.stmt.no_grad
        for site in scope.calls
    )


def _helper_controls_sync(scope: Scope, loop: Loop, facts: ModuleFacts) -> bool:
    """The micro-step (an iteration of `loop`) calls a project function that switches sync itself
    (EDM's `with misc.ddp_sync(ddp, last_round):`, whose body enters `module.no_sync()`)."""
    for site in scope.calls:
        if not loop.contains(site.stmt):
            continue
        callee = facts.analysed.resolver.resolve(site.call, scope)
        if callee is not None and _scope_manages_sync(callee.scope):
            return True
    return False


def _wrapped_models_in(loop: Loop, scope: Scope, facts: ModuleFacts, models: set[str]) -> list[str]:
    """The DDP models wrapped in sight that the loop reads or calls (`self.model(x)`), in order, but
    not one whose every forward in the loop runs without autograd or is detached at once (a
    distillation teacher: no gradient reaches its parameters, so it never reduces)."""
    aliases = _local_aliases(scope, facts, models)
    names = models | set(aliases)
    used = [o.name for o in scope.occurrences if o.name in names and loop.contains(o.stmt)]
    used += [dotted(site.call.func) or "" for site in scope.calls if dotted(site.call.func) in names and loop.contains(site.stmt)]
    found = [
        name for name in used
        if (name in aliases or _wrapping_in_sight(name, scope, facts) is not None)
        and not _only_graph_free_forwards(name, loop, scope) and not _forward_past_the_wrapper(name, loop, scope)
    ]
    return found + [name for name in _forwards_in_methods(loop, scope, facts, models) if name not in found]


def _forwards_in_methods(loop: Loop, scope: Scope, facts: ModuleFacts, models: set[str]) -> list[str]:
    """The DDP models on `self` that a method of the same class, called in the loop, runs forward
    with autograd (`self.run_min_batch(batch)` holding `self.model(batch)`): the trainer's
    micro-step spread over two methods."""
    found: list[str] = []
    for site in scope.calls:
        if not loop.contains(site.stmt) or site.stmt.no_grad:
            continue
        callee = facts.analysed.resolver.resolve(site.call, scope)
        if callee is None or callee.scope is scope or not any(callee.scope is m for m in scope.class_scopes):
            continue
        for inner in callee.scope.calls:
            model = _forwarded_model(inner.call)
            if model.startswith("self.") and model in models and not inner.stmt.no_grad and model not in found:
                if _wrapping_in_sight(model, scope, facts) is not None:
                    found.append(model)
    return found


def _forwarded_model(call: ast.Call) -> str:
    """The model a call runs forward by its name: `self.model` for `self.model(x)` and
    `self.model.forward(x)` ("" when the callee has no name)."""
    name = dotted(call.func) or ""
    return name[: -len(".forward")] if name.endswith(".forward") else name


def _wrapped_submodules(loop: Loop, scope: Scope, facts: ModuleFacts, models: set[str]) -> list[str]:
    """The DDP-wrapped submodules of a model the loop runs forward with autograd (`dlrm.bot_l =
    DDP(dlrm.bot_l)` in sight, then `dlrm(x)` in the loop): each one all-reduces its own gradients
    on every backward through it."""
    found: list[str] = []
    for site in scope.calls:
        if not loop.contains(site.stmt) or site.stmt.no_grad:
            continue
        model = _forwarded_model(site.call)
        if not any(m.startswith(model + ".") for m in models):
            model = _global_run_by(site.call, scope, facts, models) or ""
        if not model or model in models or _only_graph_free_forwards(model, loop, scope):
            continue
        for name in sorted(models):
            parent, _, attr = name.rpartition(".")
            if parent == model and attr != "module" and name not in found and _wrapping_in_sight(name, scope, facts):
                found.append(name)
    return found


def _wrapped_by_subclass(
    loop: Loop, scope: Scope, facts: ModuleFacts
) -> Optional[tuple[str, str, AnalysedModule, ast.AST]]:
    """`self.vlm(...)` run forward in a base class's loop, where a subclass (here or in a module
    that imports this one) sets `self.vlm = DDP(self.vlm, ...)` in one of its methods (a training
    strategy per backend): (the model, the subclass, its module, the wrapping call). Not where
    that module controls sync itself."""
    owner = enclosing_class(scope)
    if owner is None or owner.class_node is None:
        return None
    forwards = []
    for site in scope.calls:
        model = _forwarded_model(site.call)
        if loop.contains(site.stmt) and not site.stmt.no_grad and model.count(".") == 1 and model.startswith("self."):
            forwards.append(model)
    if not forwards:
        return None
    base = owner.class_node.name
    module_here = facts.analysed
    candidates = [module_here]
    index, path = module_here.index, module_here.path
    if index is not None and path is not None:
        for other in index.importers(index.resolved(path)):
            found = analysed(index, other)
            if found is not None:
                candidates.append(found)
    for module in candidates:
        for cls in module.collected.classes.values():
            if cls is owner.class_node or not any(last_part(dotted(b)) == base for b in cls.bases):
                continue
            for method in (s for s in module.collected.scopes if s.class_node is cls):
                for model in forwards:
                    for definition in method.definitions(model):
                        if _builds_wrapper(definition.value, module) and not _sync_managed_in(module, facts):
                            if module is not module_here and index is not None and module.path is not None:
                                module_here.consulted.add(index.resolved(module.path))
                            return model, cls.name, module, definition.stmt.node
    return None


def _global_run_by(call: ast.Call, scope: Scope, facts: ModuleFacts, models: set[str]) -> Optional[str]:
    """`Z = dlrm_wrap(X, ...)`, a module function of this file that runs `dlrm(...)`, where `dlrm`
    is a global that this function declares (`global dlrm`) and has DDP around some of its
    submodules: the model the call runs forward."""
    callee = facts.analysed.resolver.resolve(call, scope)
    if callee is None or callee.module is not facts.analysed or isinstance(callee.scope.node, ast.Module):
        return None
    if callee.scope.parent is not None and not isinstance(callee.scope.parent.node, ast.Module):
        return None  # a nested function reads its enclosing function's names, not the module's
    for inner in callee.scope.calls:
        name = dotted(inner.call.func) or ""
        if not name or "." in name or name in callee.scope.params or name in callee.scope.defs or inner.stmt.no_grad:
            continue
        if any(m.startswith(name + ".") for m in models) and _declares_global(scope, name):
            return name
    return None


def _declares_global(scope: Scope, name: str) -> bool:
    return any(isinstance(node, ast.Global) and name in node.names for node in ast.walk(scope.node))


def _forward_past_the_wrapper(name: str, loop: Loop, scope: Scope) -> bool:
    """`self.model.module.train_step(batch)` under `if distributed:`: the loop reaches the model's
    methods through `.module`, never calling the wrapper itself (`model(x)`, `model.forward(x)`),
    so DDP's forward never runs and there is no all-reduce to switch off (nor any at all)."""
    calls = [dotted(site.call.func) or "" for site in scope.calls if loop.contains(site.stmt)]
    through_module = any(call.startswith(name + ".module.") for call in calls)
    return through_module and not any(call in {name, name + ".forward"} for call in calls)


def _wrapping_of(name: str, scope: Scope, facts: ModuleFacts) -> Optional[Definition]:
    """The wrapping in sight of a model name, or of the model a local alias holds."""
    source = _local_aliases(scope, facts, _ddp_models(facts)).get(name, name)
    return _wrapping_in_sight(source, scope, facts)


def _local_aliases(scope: Scope, facts: ModuleFacts, models: set[str]) -> dict[str, str]:
    """Local names bound to a DDP model wrapped in sight (`encoder = self.encoder` in a method
    called after another one wrapped it), and maybe wrapped again in DataParallel, which keeps the
    DDP inside: every definition is one of the two, at least one the alias."""
    found: dict[str, str] = {}
    for name, definitions in scope.defs.items():
        if name in models or "." in name:
            continue
        aliased: Optional[str] = None
        for definition in definitions:
            value = definition.bound_value() if definition.kind in {"assign", "unpack"} else None
            source = dotted(value) if value is not None else None
            if source is not None and source in models and _wrapping_in_sight(source, scope, facts) is not None:
                aliased = source
            elif not _rewraps(value, name, facts.roles):
                break
        else:
            if aliased is not None:
                found[name] = aliased
    return found


def _rewraps(value: Optional[ast.expr], name: str, roles: Roles) -> bool:
    """`name = DataParallel(name)`: the single-process wrapper around the name's own model."""
    return (
        isinstance(value, ast.Call) and bool(value.args) and dotted(value.args[0]) == name
        and roles.canonical(dotted(value.func)).rsplit(".", 1)[-1] == "DataParallel"
    )


def _only_graph_free_forwards(model: str, loop: Loop, scope: Scope, block: Optional[ast.AST] = None) -> bool:
    """Every statement of the loop (of `block` in it, when given) that reads the model is a forward
    under `torch.no_grad()`, or binds its outputs to names that the loop reads only through
    `.detach()` (`t = t.detach()`, `ts = [t.detach() for t in ts]`)."""
    def counted(stmt: Stmt) -> bool:
        return loop.contains(stmt) and (block is None or stmt.within(block))

    statements = {id(o.stmt): o.stmt for o in scope.occurrences if o.name == model and not o.write and counted(o.stmt)}
    statements.update({id(site.stmt): site.stmt for site in scope.calls if dotted(site.call.func) == model and counted(site.stmt)})
    if not statements:
        return False
    for stmt in statements.values():
        if stmt.no_grad:
            continue
        outputs = {d.name for ds in scope.defs.values() for d in ds if d.stmt is stmt and d.kind in {"assign", "unpack"}}
        if not outputs or not all(_read_only_detached(name, stmt, loop, scope) for name in outputs):
            return False
    return True


def _read_only_detached(name: str, made: Stmt, loop: Loop, scope: Scope) -> bool:
    if name == "_":
        return True
    for o in scope.occurrences:
        if not (o.name == name or o.name.startswith(name + ".")):
            continue  # `outputs` itself, or a field of it (`outputs.cache`)
        if o.write or o.detached or not loop.contains(o.stmt) or o.stmt.order <= made.order:
            continue
        base, _ = reaching(name, scope, o.stmt.order, o.stmt)
        if base is None or (base.stmt is not made and base.order > made.order and base.stmt.compatible(made)):
            continue  # reads a later binding (`t = t.detach()`), not the forward's outputs
        value = getattr(o.stmt.node, "value", None)
        if isinstance(value, ast.ListComp) and _detaches_each(value, name):
            continue
        return False
    return True


def _detaches_each(comprehension: ast.ListComp, name: str) -> bool:
    """`[t.detach() for t in name]`."""
    if len(comprehension.generators) != 1:
        return False
    generator = comprehension.generators[0]
    element = comprehension.elt
    return (
        isinstance(generator.iter, ast.Name) and generator.iter.id == name and isinstance(generator.target, ast.Name)
        and isinstance(element, ast.Call) and isinstance(element.func, ast.Attribute)
        and element.func.attr == "detach" and dotted(element.func.value) == generator.target.id
    )


def _pinned_to_one(facts: ModuleFacts) -> set[str]:
    """Names the module asserts to be 1 once, outside any loop (`if args.distributed: assert
    args.accumsteps == 1` before training): a loop that accumulates over one of them never
    accumulates where the assertion holds. An assertion inside a loop guards one branch of it
    (a zeroth-order step that cannot accumulate), not the whole run."""
    def find() -> set[str]:
        # a method's assertion speaks for that method alone (`run_vla_training` asserting k == 1
        # beside `run_training`, which accumulates): read in `_reads_pinned`
        return {
            name for scope in facts.collected.scopes if scope.class_node is None for stmt in scope.stmts
            if not stmt.loops and (name := pinned_by(stmt)) is not None
        }

    return facts.cached("acc009_pinned_to_one", find)


def _reads_pinned(loop: Loop, scope: Scope, facts: ModuleFacts) -> bool:
    """The loop reads an accumulation count the module asserts to be 1 (`loss / args.accumsteps`)."""
    pinned = set(_pinned_to_one(facts))
    if scope.class_node is not None:
        pinned |= {name for stmt in scope.stmts if not stmt.loops and (name := pinned_by(stmt)) is not None}
    pinned = {name for name in pinned if "accum" in last_part(name).lower()}
    return bool(pinned) and any(o.name in pinned and loop.contains(o.stmt) for o in scope.occurrences)


def _in_the_loop(facts: ModuleFacts, reported: set[int]) -> Iterator[Violation]:
    """A DDP model wrapped in sight of the loop that accumulates with it."""
    models = _ddp_models(facts)
    for sf in facts.scopes:
        loops: set[int] = set()  # the AMP and plain paths of one loop are two windows: one finding
        for window in sf.windows:
            if id(window.micro_loop.node) in loops:
                continue
            used = _wrapped_models_in(window.micro_loop, sf.scope, facts, models)
            submodules = [] if used else _wrapped_submodules(window.micro_loop, sf.scope, facts, models)
            used = used or submodules
            by_subclass = None if used else _wrapped_by_subclass(window.micro_loop, sf.scope, facts)
            used = used or ([by_subclass[0]] if by_subclass is not None else [])
            holder = None if used else _holder_called_in(window, sf.scope, facts, models)
            used = used or ([holder[0]] if holder is not None else [])
            backward = _backward_every_micro_step(window, sf.events, facts, used) if used else None
            if backward is None or backward.call is None or id(backward.call) in reported:
                continue
            if _helper_controls_sync(sf.scope, window.micro_loop, facts) or _reads_pinned(window.micro_loop, sf.scope, facts):
                continue
            if dotted(window.k) in _pinned_to_one(facts):
                continue
            reported.add(id(backward.call))
            loops.add(id(window.micro_loop.node))
            if by_subclass is not None:
                model, subclass, module, wrap = by_subclass
                yield Violation(
                    CODE,
                    f"`{model}` is a DistributedDataParallel model where the subclass `{subclass}` "
                    f"({place_in(module, wrap)}) wraps it, and this loop reduces its gradients across ranks on "
                    f"every micro-step: {_advice(facts, model)}",
                    backward.call,
                )
                continue
            if submodules:
                listed = ", ".join(f"`{m}`" for m in submodules)
                contexts = " and ".join(f"`{m}.no_sync()`" for m in submodules)
                yield Violation(
                    CODE,
                    f"the DistributedDataParallel submodule{'s' if len(submodules) > 1 else ''} {listed} of "
                    f"`{submodules[0].rpartition('.')[0]}` reduce{'' if len(submodules) > 1 else 's'} gradients across "
                    f"ranks on every micro-step: wrap the forward and backward of non-final micro-steps in {contexts}",
                    backward.call,
                )
                continue
            if holder is not None:
                name, held = holder
                wrapping = _wrapping_in_sight(held.value, sf.scope, facts)
                inner = held.reached_through(name)  # `actor.net`
                yield Violation(
                    CODE,
                    f"`{held.value}`, {_subject(facts, wrapping)}, held by `{name}` as `{held.attribute}`, runs "
                    f"whenever `{name}` is called, and reduces gradients across ranks on every micro-step: "
                    f"{_advice(facts, inner, wrapping=wrapping)}",
                    backward.call,
                )
                continue
            wrapping = _wrapping_of(used[0], sf.scope, facts)
            yield Violation(
                CODE,
                f"{_subject(facts, wrapping)} reduces gradients across ranks on every "
                f"micro-step: {_advice(facts, used[0], wrapping=wrapping)}{_others_too(used)}",
                backward.call,
            )


def _holder_called_in(window: Window, scope: Scope, facts: ModuleFacts, models: set[str]) -> Optional[tuple[str, Holder]]:
    """An object of this scope that holds a DDP model wrapped in sight and runs it when called
    (`actor = Actor(net=model)`), called with autograd on every micro-step of the window."""
    for name, held in sorted(holders(scope, models, facts.analysed.resolver).items()):
        if _wrapping_in_sight(held.value, scope, facts) is not None and _called_in_micro_loop(name, scope, window):
            return name, held
    return None


def _loops_of_passes(facts: ModuleFacts) -> Iterator[tuple[ScopeFacts, Loop, Event]]:
    """Each loop of passes with the step after it: in one function, or in a function of this
    module that a caller runs right before its step (`self.forward_backward(batch)`, a split
    window), read in the function that holds the loop."""
    for sf in facts.scopes:
        for loop, step in sf.pass_loops():
            yield sf, loop, step
    holding = {id(sf.scope): sf for sf in facts.scopes}
    for sf in facts.scopes:
        for window in sf.called_windows():
            callee = holding.get(id(window.callee.scope))
            if callee is not None and window.callee.module is facts.analysed:
                yield callee, window.loop, window.step


def _in_a_loop_of_passes(facts: ModuleFacts, reported: set[int]) -> Iterator[Violation]:
    """A DDP model wrapped in sight and run in a loop of micro-batches whose every pass runs
    backward, with the step once after the loop (`for batch in batch_steps: ... backward()` then
    `optimizer.step()`, or a `while` loop of restarts): however many passes there are, each
    all-reduces."""
    models = _ddp_models(facts)
    stepped: set[int] = set()  # two loops of passes before one step make one window: one finding
    for sf, loop, step in _loops_of_passes(facts):
        if id(step) in stepped:
            continue
        used = _wrapped_models_in(loop, sf.scope, facts, models)
        own = [e for e in sf.events if not _engine_backward(e, facts)]  # not `if ds: engine.backward(loss)`
        backward = backward_each_pass(sf.scope, own, loop) if used else None
        if backward is None or backward.call is None or id(backward.call) in reported:
            continue
        if backward.callee is not None and _helpers_manage_sync(backward, facts):
            continue
        if _helper_controls_sync(sf.scope, loop, facts) or _reads_pinned(loop, sf.scope, facts):
            continue
        reported.add(id(backward.call))
        stepped.add(id(step))
        wrapping = _wrapping_of(used[0], sf.scope, facts)
        kind = "`while` loop" if isinstance(loop.node, ast.While) else "loop of micro-batches"
        yield Violation(
            CODE,
            f"{_subject(facts, wrapping)} reduces gradients across ranks on every pass of this {kind}, "
            f"while the optimizer steps once after it: {_advice(facts, used[0], wrapping=wrapping)}"
            f"{_others_too(used)}",
            backward.call,
        )


def _handed_over(facts: ModuleFacts, reported: set[int]) -> Iterator[Violation]:
    """A DDP model wrapped here and handed to a function (or a project class) whose loop
    accumulates with it: `model = DDP(model)` in `main()`, then `train_one_epoch(model, ...)`.
    Also an object that holds the model and runs it when called (`actor = Actor(net=model)`),
    handed to a loop that calls it every micro-step."""
    models = _ddp_models(facts)
    resolver = facts.analysed.resolver
    for sf in facts.scopes:
        held = {
            name: built for name, built in holders(sf.scope, models, resolver).items()
            if _wrapping_in_sight(built.value, sf.scope, facts) is not None
        }
        for site in sf.scope.calls:
            if site.stmt.no_grad:
                continue  # `with torch.no_grad(): full_eval(model, ...)`: no backward runs there
            handed = {name for a in call_arguments(site.call) for name in handed_names(a)}
            # an object holding a model counts only where no DDP model is handed over directly
            for value in sorted(handed & models) or sorted(handed & set(held)):
                holder: Optional[Holder] = held.get(value)
                wrapping = _wrapping_in_sight(holder.value if holder is not None else value, sf.scope, facts)
                if wrapping is None:
                    continue
                for handoff in handoffs(site, value, resolver):
                    split = _split_window_reading(sf, site, handoff) if holder is None else None
                    if split is not None and split.call is not None and id(split.call) not in reported:
                        reported.add(id(split.call))
                        yield _handed_finding(facts, site, value, wrapping, handoff, handoff.callee.scope, split, None)
                        continue
                    for final, reader, backward in _loops_reached(handoff, facts, called=holder is not None):
                        assert backward.call is not None
                        if id(backward.call) in reported:
                            continue
                        reported.add(id(backward.call))
                        via = handoff.readers[0].name if final is not handoff else None
                        yield _handed_finding(facts, site, value, wrapping, final, reader, backward, via, holder)


def _split_window_reading(sf: ScopeFacts, site: CallSite, handoff: Handoff) -> Optional[Event]:
    """The first backward of the micro-batch loop that the called function runs with the handed
    model, when this call and the step after it make a split window (`forward_backward(model,
    batch, k)`, then `optimizer.step()`)."""
    for window in sf.called_windows():
        if window.call.call is not site.call or window.callee.scope is not handoff.callee.scope:
            continue
        scope = window.callee.scope
        if any(o.name == handoff.name and window.loop.contains(o.stmt) for o in scope.occurrences):
            return window.backwards[0]
    return None


def _loops_reached(
    handoff: Handoff, facts: ModuleFacts, depth: int = 0, called: bool = False,
) -> Iterator[tuple[Handoff, Scope, Event]]:
    """The accumulating loops that run the handed model every micro-step: in a function it is
    handed to, or, where that function has none, further down the calls that hand it on (a
    runner's `train_epoch(model)` handing it to `_train_inner_loop(model)`). `called`: the value
    handed is an object holding the model, which runs it only when the loop calls the object."""
    module = handoff.module
    if _sync_managed_in(module, facts):
        return
    for reader in handoff.readers:
        events, windows = module.windows_handed(reader, handoff.classes)
        found = False
        loops: set[int] = set()  # the AMP and plain paths of one loop are two windows: one finding
        for window in windows:
            if id(window.micro_loop.node) in loops:
                continue
            if called and not _called_in_micro_loop(handoff.name, reader, window):
                continue
            if not called and not _read_every_micro_step(handoff.name, reader, window):
                continue
            if _forward_past_the_wrapper(handoff.name, window.micro_loop, reader):
                continue  # `model.module.f(x)` when wrapped: DDP's forward never runs in the loop
            backward = _backward_every_micro_step(window, events, facts, (handoff.name,))
            if backward is not None and backward.call is not None:
                found = True
                loops.add(id(window.micro_loop.node))
                yield handoff, reader, backward
        if found or depth >= _MAX_HOPS:
            continue
        for site in reader.calls:
            if not site.stmt.no_grad and any(handoff.name in handed_names(argument) for argument in call_arguments(site.call)):
                for onward in handoffs(site, handoff.name, module.resolver):
                    yield from _loops_reached(onward, facts, depth + 1, called)


def _handed_finding(
    facts: ModuleFacts, site: CallSite, value: str, wrapping: Definition, handoff: Handoff, reader: Scope,
    backward: Event, via: Optional[str], holder: Optional[Holder] = None,
) -> Violation:
    line = getattr(wrapping.stmt.node, "lineno", "?")
    owner = _preparer(wrapping, facts)
    model = holder.value if holder is not None else value
    head = f"the DistributedDataParallel model `{model}` (wrapped at line {line})"
    if owner is not None:
        head = f"the model `{model}` that `{owner}` prepared at line {line} (DistributedDataParallel on a multi-process launch)"
    if holder is not None:
        head += f", held by `{value}` as `{holder.attribute}`, which runs it when called,"
    function = f"`{reader.name}()`" + (f" through `{via}()`" if via is not None else "")
    named = value if owner is not None else handoff.name  # what the loop calls it (`self.model` in a trainer)
    if holder is not None:
        named = holder.reached_through(handoff.name)  # `self.actor.net`
    assert backward.call is not None
    if handoff.module is facts.analysed:
        call_line = getattr(site.stmt.node, "lineno", "?")
        return Violation(
            CODE,
            f"{head} is handed to {function} at line {call_line}, and reduces gradients across ranks on every "
            f"micro-step of this loop: {_advice(facts, named, wrapping=wrapping)}",
            backward.call,
        )
    where = place_in(handoff.module, backward.call)
    return Violation(
        CODE,
        f"{head} is handed to {function} ({where}), whose loop reduces gradients across ranks on every "
        f"micro-step: {_advice(facts, named, ' there', wrapping)}",
        site.call,
    )


def check(facts: ModuleFacts) -> Iterator[Violation]:
    if not _ddp_models(facts):
        # a base class's loop may still run a model that a subclass elsewhere wraps
        if any(sf.windows and enclosing_class(sf.scope) is not None for sf in facts.scopes) \
                and not _sync_managed_in(facts.analysed, facts):
            yield from _in_the_loop(facts, set())
        return
    for sf in facts.scopes:
        yield from _backward_only_no_sync(facts, sf)
        yield from _flag_after_forward(sf)
        yield from _accumulate_leaves_out(facts, sf)
    if _sync_managed_in(facts.analysed, facts):
        return
    reported: set[int] = set()
    yield from _in_the_loop(facts, reported)
    yield from _in_a_loop_of_passes(facts, reported)
    yield from _handed_over(facts, reported)
