"""ACC006 retain-graph-in-loop: `backward(retain_graph=True)` where nothing needs the graph again.

The graph is needed again only by a later backward through it that must see the gradients as they
stand between the two passes. When no later backward runs, or when nothing between this pass and
the next one reads or changes the gradients (no `.grad`, no step, zero_grad, clip or unscale, no
`torch.autograd.grad`), one backward of the summed losses gives the same gradients."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable, Iterator, Optional

from accumlint.analysis import ModuleFacts, settings
from accumlint.analysis.ancestry import ancestry_definitions, backward_ancestry, every_branch_ancestry
from accumlint.analysis.calls import AnalysedModule, Callee, bound_arguments
from accumlint.analysis.collect import Definition, Loop, Scope, Stmt
from accumlint.analysis.dataflow import DataFlow
from accumlint.analysis.events import BACKWARD, CLIP, STEP, UNSCALE, UPDATE, ZERO, Event, retains_graph
from accumlint.analysis.exprs import BUILTIN_NAMES, FILLING_METHODS, class_like, dotted, last_part, method_of, names_in, subscript_holder
from accumlint.analysis.reach import Reached, reached
from accumlint.frameworks import torch_core
from accumlint.model import Fix, Violation
from accumlint.rules.common import checking_test_loop, located, place_in
from accumlint.rules.edits import remove_keyword
from accumlint.rules.meta import FixSafety

CODE = "ACC006"
NAME = "retain-graph-in-loop"
SUMMARY = "backward(retain_graph=True) keeps a graph nothing uses again"
FIX: FixSafety = "unsafe"
_GRADIENT_EVENTS = {STEP, ZERO, CLIP, UNSCALE, UPDATE}


def _touches_grad(node: ast.AST) -> bool:
    """Reads or writes `.grad`, or calls something named for gradients (`torch.autograd.grad`,
    `get_grad_norm`, `log_gradients`, PCGrad's `pc_backward`)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in {"grad", "main_grad"}:
            return True
        if isinstance(sub, ast.Call):
            _, method = method_of(sub)
            name = (method or "").lower()
            if name == "grad" or "grad" in name.split("_") or "gradient" in name or "grads" in name:
                return True
    return False


def _callee_touches_grad(facts: ModuleFacts, stmt: Stmt, depth: int = 0) -> bool:
    """A project function called in the statement reads or changes gradients."""
    if depth > 2:
        return False
    for sub in ast.walk(stmt.node):
        if not isinstance(sub, ast.Call):
            continue
        callee = facts.analysed.resolver.resolve(sub, stmt.scope)
        if callee is None:
            continue
        for inner in callee.scope.stmts:
            if any(_touches_grad(part) for part in inner.own_parts):
                return True
    return False


def _gradients_used(facts: ModuleFacts, events: list[Event], stmts: list[Stmt]) -> bool:
    ids = {id(s) for s in stmts}
    if any(e.kind in _GRADIENT_EVENTS and id(e.stmt) in ids for e in events):
        return True
    return any(any(_touches_grad(part) for part in s.own_parts) or _callee_touches_grad(facts, s) for s in stmts)


def _later_backwards(event: Event, events: list[Event], outer: Loop) -> list[Event]:
    return [
        e for e in events
        if e.kind == BACKWARD and e is not event and e.order > event.order and outer.contains(e.stmt)
        and e.stmt.compatible(event.stmt)
    ]


def _next_through_the_same_graph(event: Event, later: list[Event], sf, facts: ModuleFacts) -> Optional[Event]:
    """The next backward, when one of the later backwards may run through this one's graph."""
    first = ancestry_definitions(sf.scope, event, into_outputs=True)
    if not any(_through_the_same_graph(event, first, other, sf, facts) for other in later):
        return None  # a GAN's G step on a fresh forward: the D graph is never used again
    return min(later, key=lambda e: e.order)


def _through_the_same_graph(event: Event, first: dict[str, list[Definition]], later: Event, sf, facts: ModuleFacts) -> bool:
    """The later backward may run through a graph-carrying value that this one (whose ancestry is
    `first`) ran through: the same definition of a name reaches both, or a name neither can trace
    (an attribute set in another method, a parameter) that may carry a graph. A later loss built by
    a method of this class may read what this pass left on `self`: also the same graph, as far as
    we can tell."""
    scope: Scope = sf.scope
    second = ancestry_definitions(scope, later, into_outputs=True)
    if any(_reads_own_methods(d, scope) for ds in second.values() for d in ds if d.order > event.order):
        return True
    for name in first.keys() & second.keys():
        if not first[name] or not second[name]:
            if _may_carry(name, scope, facts.analysed):
                return True
            continue
        common = [d for d in first[name] if any(d is other for other in second[name])]
        if any(facts.flow.definition_carries(d) or _unpacked_under_autograd(d) for d in common):
            return True
    return _unpacked_from_one_call(first, second, facts)


def _may_meet_on_a_branch(event: Event, later: Event, sf, facts: ModuleFacts) -> bool:
    """Read with every definition of each name before the backwards, on any branch (`if
    self.train_decoder: context_loss = kl + decoder_loss` / `else: context_loss = kl`), the two
    passes may reach one graph-carrying value: then removing `retain_graph` may break the later
    backward, and nothing is claimed."""
    first, second = every_branch_ancestry(sf.scope, event), every_branch_ancestry(sf.scope, later)
    return any(
        facts.flow.definition_carries(d) or _unpacked_under_autograd(d)
        for key, d in first.items() if key in second
    )


def _unpacked_under_autograd(definition: Definition) -> bool:
    """`dist, p_z, task_z = self.agent(obs, context)` with autograd on: an output of a forward
    the analysis cannot read may carry its graph, and both passes reach this very value, so the
    second may run through the graph the first retained."""
    return definition.kind == "unpack" and isinstance(definition.value, ast.Call) and not definition.stmt.no_grad


def _unpacked_from_one_call(first: dict[str, list[Definition]], second: dict[str, list[Definition]], facts: ModuleFacts) -> bool:
    """`loss, memories = model(x)`, then `loss.backward(...)` and `memories.backward(grad)`: two
    outputs of one forward call, both graph-carrying, share that call's graph."""
    unpacked = {id(d.stmt): d for ds in first.values() for d in ds if d.kind == "unpack"}
    for ds in second.values():
        for d in ds:
            other = unpacked.get(id(d.stmt)) if d.kind == "unpack" else None
            if other is not None and other is not d and all(facts.flow.definition_carries(x) for x in (d, other)):
                return True
    return False


def _reads_own_methods(definition: Definition, scope: Scope) -> bool:
    """`g_loss = self.generator_loss(z)`: a method of this class, which may read `self` state."""
    methods = {f"self.{s.name}" for s in scope.class_scopes}
    return definition.value is not None and any(
        isinstance(node, ast.Call) and dotted(node.func) in methods for node in ast.walk(definition.value)
    )


def _may_carry(name: str, scope: Scope, module: AnalysedModule) -> bool:
    """A name bound outside this function: graph-free only when every binding in sight is."""
    if name.split(".")[0] in module.collected.imports:
        return False  # `torch.FloatTensor`, `np.random`: a module, no tensor
    if settings.read_from_settings(name):
        return False  # `self.training_args.clip_loss_value`: a setting handed to a loss function
    bindings = [d for seen in scope.sight() for d in seen.definitions(name)]
    return not bindings or any(d.kind == "param" or module.flow.definition_carries(d) for d in bindings)


def _loss_names(tensor: Optional[ast.expr]) -> set[str]:
    """The names a backward's tensor scales: `loss`, `loss / k`, `loss * weight`."""
    if isinstance(tensor, ast.BinOp) and isinstance(tensor.op, ast.Div):
        return _loss_names(tensor.left)
    if isinstance(tensor, ast.BinOp) and isinstance(tensor.op, ast.Mult):
        return _loss_names(tensor.left) | _loss_names(tensor.right)
    name = dotted(tensor) if tensor is not None else None
    return {name} if name is not None else set()


def _repeating_loop(event: Event, events: list[Event]) -> Optional[Loop]:
    """An inner loop that runs this backward once per head or task (no step inside it), or a
    loop over precomputed losses (`for loss in losses: (loss / k).backward(retain_graph=True)`)."""
    if not event.stmt.loops:
        return None
    inner = event.stmt.loops[-1]
    if len(event.stmt.loops) < 2 and not _loss_names(event.tensor) & set(inner.targets):
        return None
    if any(e.kind == STEP and inner.contains(e.stmt) for e in events):
        return None  # a micro-step loop: each iteration builds its own graph
    return inner


def _shares_graph(event: Event, inner: Loop, sf, facts: ModuleFacts) -> bool:
    """The repeated backward runs through values built before the inner loop (shared features)."""
    for name in backward_ancestry(sf.scope, [event], into_outputs=True):
        for definition in sf.scope.definitions(name):
            if definition.kind == "for" and definition.stmt.node is inner.node and not _counts(inner):
                iterable = inner.iter_expr
                if name in _loss_names(event.tensor) or (iterable is not None and facts.flow.carries_graph(iterable, inner.header)):
                    return True  # `for loss in losses:` over values computed before the loop (not batches)
                continue
            if not inner.contains(definition.stmt) and definition.stmt.loops and definition.order < inner.header.order:
                if definition.kind in {"assign", "unpack"}:
                    return True
    return False


def _counts(loop: Loop) -> bool:
    """`for i in range(n):`: its target is a number, not a value computed before the loop."""
    iterable = loop.iter_expr
    return isinstance(iterable, ast.Call) and dotted(iterable.func) == "range"


def _chains(event: Event, sf, facts: ModuleFacts, outer: Loop) -> Optional[str]:
    """A state read before it is reassigned in the loop, from a graph-carrying value: each
    iteration's graph then hangs on the previous one."""
    scope: Scope = sf.scope
    for name in sorted(backward_ancestry(scope, [event], into_outputs=True)):
        definitions = [d for d in scope.definitions(name) if outer.contains(d.stmt) and d.kind in {"assign", "unpack"}]
        if not definitions:
            continue
        first_def = min(d.order for d in definitions)
        read_before = any(
            o.name == name and not o.write and not o.detached and outer.contains(o.stmt) and o.stmt.order <= first_def
            for o in scope.occurrences
        )
        if read_before and any(facts.flow.definition_carries(d) for d in definitions):
            return name
    return None


def _graph_from_before(event: Event, sf, facts: ModuleFacts, outer: Loop) -> Optional[str]:
    """A value the backward runs through that every iteration shares: bound before the loop from
    a graph-carrying value and never rebound in it (`feats = encoder(data)` once, then
    `head(feats).sum().backward(retain_graph=True)` per iteration), or tensors handed in as
    `*inputs`, which may be non-leaf. The next iteration's backward goes through that part of the
    graph again, so it must be kept."""
    scope: Scope = sf.scope
    node = scope.node
    star = node.args.vararg.arg if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.vararg else None
    called = {dotted(site.call.func) for site in scope.calls}
    ancestry = ancestry_definitions(scope, event)
    fresh = _forward_in(ancestry, outer, facts)
    for name, definitions in ancestry.items():
        if name == star:
            return name
        if not definitions or any(outer.contains(d.stmt) for d in scope.definitions(name)):
            continue  # rebound in the loop: each iteration's own value (or a chained state)
        if name in called or _holds_modules(name, scope) or any(_holds_no_graph(d, facts) for d in definitions):
            continue  # a module handed to a loss helper (`ic_loss(model)`), or modules held by an object, not a tensor
        if any(d.kind in {"assign", "unpack"} and facts.flow.definition_carries(d) for d in definitions):
            return name
        if _written_into_before(name, scope, outer):
            return name
        if not fresh and any(_made_by_a_forward(d, facts) for d in definitions):
            return name  # nothing in the loop runs a forward: the graph can only come from before it
    return None


def _forward_in(ancestry: dict[str, list[Definition]], outer: Loop, facts: ModuleFacts) -> bool:
    """A call on the way to the backward, inside the loop, that may start a graph (a model's
    forward, a project function): not only library functions and tensor methods of what the loop
    reads (`paddle.argmax(score)`, `(score * onehot).sum()` over scores computed before it)."""
    for definitions in ancestry.values():
        for definition in definitions:
            if not outer.contains(definition.stmt) or definition.value is None:
                continue
            for sub in ast.walk(definition.value):
                if isinstance(sub, ast.Call) and _may_start_a_graph(sub, definition.stmt, facts):
                    return True
    return False


def _may_start_a_graph(call: ast.Call, at: Stmt, facts: ModuleFacts) -> bool:
    """Not a builtin (`int(i)`, `len(x)`), a library's function (`torch.sum`, `paddle.argmax`) or
    a tensor method of a value the function computed: a model, a project function, an object's
    method, any of which may run a forward."""
    func = dotted(call.func) or ""
    if isinstance(call.func, ast.Name) and func in BUILTIN_NAMES and func not in facts.collected.imports:
        return False
    if func.split(".", 1)[0] in facts.collected.imports and not facts.analysed.resolver.points_into_project(call):
        # `torch.sum(x)`, `paddle.argmax(s)`; but `checkpoint(model, x)` runs the model it is handed
        return any(facts.flow._names_a_model(dotted(arg) or "", at) for arg in call.args)
    receiver, _ = method_of(call)
    name = dotted(receiver) if receiver is not None else None
    if receiver is not None and facts.flow._local_value(receiver, at) and not facts.flow._names_a_model(name or "", at):
        return False
    return True


def _made_by_a_forward(definition: Definition, facts: ModuleFacts, depth: int = 0) -> bool:
    """The value was made, here or through the names it reads, by a call that may run a forward
    (`extra = result["extra_data"]` with `result = self.predict(image)`), not from library
    functions of data (`x = torch.arange(0, 1, 0.1)`, `y = x * 0.5`)."""
    if definition.kind not in {"assign", "unpack"} or definition.value is None or depth > 4:
        return False
    if definition.stmt.no_grad or _plainly_graph_free(definition.value):
        return False  # `feats = backbone(x).detach()`: a probe's fixed features hold no graph
    for sub in ast.walk(definition.value):
        if isinstance(sub, ast.Call) and _may_start_a_graph(sub, definition.stmt, facts):
            return True
    scope = definition.stmt.scope
    for name in names_in(definition.value):
        earlier = [d for d in scope.definitions(name) if d.order < definition.order]
        if earlier and _made_by_a_forward(earlier[-1], facts, depth + 1):
            return True
    return False


def _holds_modules(name: str, scope: Scope) -> bool:
    """`model = build_model()` then `model.disc.parameters()` handed to an optimizer: `model`
    holds modules (a dict or namespace of them from a factory out of sight), no shared tensor."""
    prefix = name + "."
    for seen in scope.sight():
        for site in seen.calls:
            func = site.call.func
            if not isinstance(func, ast.Attribute) or func.attr not in torch_core.MODULE_ONLY_METHODS:
                continue
            owner = dotted(func.value)
            if owner is not None and (owner == name or owner.startswith(prefix)):
                return True
    return False


def _yielded_by_a_generator(event: Event, sf, facts: ModuleFacts) -> bool:
    """`for loss, last in model(x):` where the project function the loop runs (a module's
    `forward`) yields losses: a generator keeps its locals between yields (a memory carried from
    segment to segment), so a later loss's graph may run through this one's; whether it does is
    not in sight. A generator of batches builds no graph."""
    ancestry = backward_ancestry(sf.scope, [event])
    for loop in event.stmt.loops:
        iterable = loop.iter_expr
        if not isinstance(iterable, ast.Call) or not set(loop.targets) & ancestry:
            continue
        callee = facts.flow.callee_of(iterable, loop.header)
        if callee is not None and _yields_a_graph(callee):
            return True
    return False


def _yields_a_graph(callee: Callee) -> bool:
    """The function yields graph-carrying values (a segment's loss), not data (a batch)."""
    flow = callee.module.flow
    for stmt in callee.scope.stmts:
        node = stmt.node
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Yield) and node.value.value is not None:
            if flow.carries_graph(node.value.value, stmt):
                return True
    return False


def _written_into_before(name: str, scope: Scope, outer: Loop) -> bool:
    """`targets[i, idx] += resid[i]` before the loop: an in-place write into the shared tensor of a
    value not shown to be graph-free makes it part of a graph that every iteration's backward
    may run through; whether it does is not in sight."""
    for stmt in scope.stmts:
        node = stmt.node
        if stmt.order >= outer.header.order or outer.contains(stmt) or stmt.no_grad or not stmt.is_statement:
            continue
        targets: list[ast.expr]
        if isinstance(node, ast.AugAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        written = any(subscript_holder(t) == name for t in targets)
        if written and not _plainly_graph_free(value):
            return True
    return False


def _plainly_graph_free(value: ast.expr) -> bool:
    """A number, or a value detached or read out as a number where it is written."""
    if isinstance(value, ast.Constant):
        return True
    if isinstance(value, ast.Attribute) and value.attr == "data":
        return True
    return isinstance(value, ast.Call) and method_of(value)[1] in {"detach", "item", "tolist", "numpy"}


def _holds_no_graph(definition: Definition, facts: ModuleFacts) -> bool:
    """`criterion = nn.MSELoss()`, `loss_func = loss_generator(dt, dx)` with `class
    loss_generator` in the file: an object of a class, not a tensor; `w = torch.randn(1,
    requires_grad=True)` or `.requires_grad_()`: a leaf, whose gradient needs no graph kept."""
    value = definition.value
    if not isinstance(value, ast.Call):
        return False
    if last_part(dotted(value.func)) == "requires_grad_" or any(kw.arg == "requires_grad" for kw in value.keywords):
        return True
    return _builds_an_object(value, facts.collected.classes)


def _builds_an_object(call: ast.Call, classes: dict[str, ast.ClassDef]) -> bool:
    """`nn.MSELoss()`, `DynamicLossScaler(...)`, or a class of the module (`classes`)."""
    callee = dotted(call.func)
    return class_like(callee) or last_part(callee) in classes


def _between(sf, outer: Loop, start: int, end: int) -> list[Stmt]:
    return [s for s in sf.scope.stmts if outer.contains(s) and start < s.order < end]


def _handed_tensor(call: Event, found: Reached) -> Optional[ast.expr]:
    """What a called function's backward differentiates, as the caller hands it in: `loss` for
    `self.optimizer.grad_norm(loss)` whose body runs `(loss * self.scaler.scale).backward(...)`.
    None unless the backward's graph comes from exactly one parameter, besides locals and
    attributes of objects that hold no graph (a loss scaler), and the function runs no other
    backward or `autograd.grad` that could be what keeps the graph."""
    helper = found.event.stmt.scope
    if call.call is None or len(found.calls) != 1 or found.event.stmt.loops:
        return None
    if sum(e.kind == BACKWARD for e in found.module.direct[id(helper)]) != 1:
        return None
    if any(method_of(site.call)[1] == "grad" for site in helper.calls):
        return None
    names = ancestry_definitions(helper, found.event)
    params = [n for n in names if n in helper.params and n not in {"self", "cls"}]
    others = [n for n in names if n not in params]
    if len(params) != 1 or not all(names[n] or _graph_free_attribute(n, helper, found.module) for n in others):
        return None
    assert call.callee is not None
    bound = bound_arguments(call.call, call.callee)
    return bound.get(params[0]) if bound is not None else None


def _graph_free_attribute(name: str, scope: Scope, module: AnalysedModule) -> bool:
    """`self.loss_scaler.loss_scale` where the class only ever sets `self.loss_scaler` to None,
    a constant or an object it builds: no tensor with a graph."""
    parts = name.split(".")
    if parts[0] != "self" or len(parts) < 2:
        return False
    bindings = [d for seen in scope.sight() for d in seen.definitions(".".join(parts[:2]))]
    return bool(bindings) and all(_plain_binding(d.value, module) for d in bindings)


def _plain_binding(value: Optional[ast.expr], module: AnalysedModule) -> bool:
    if isinstance(value, ast.IfExp):
        return _plain_binding(value.body, module) and _plain_binding(value.orelse, module)
    if isinstance(value, ast.Constant):
        return True
    return isinstance(value, ast.Call) and _builds_an_object(value, module.collected.classes)


def _as_handed(event: Event) -> list[tuple[Event, Optional[Reached]]]:
    """A backward as the loop sees it: a direct one as it is; for a call, each backward of the
    called function with the tensor the caller hands in (None where that cannot be read: it may
    be any graph), and that backward."""
    if event.helper is None or event.callee is None:
        return [(event, None)]
    views: list[tuple[Event, Optional[Reached]]] = [
        (replace(event, tensor=_handed_tensor(event, found), retain_graph=found.event.retain_graph), found)
        for found in reached(event, BACKWARD)
    ]
    return views or [(replace(event, tensor=None), None)]


def _retaining(sf) -> Iterator[tuple[Event, Optional[Reached]]]:
    """The backward passes in a loop that keep their graph: the loop's own, and those of a
    function it calls (with the tensor handed in), which only the caller's loop can judge."""
    for event in sf.events:
        if event.kind != BACKWARD or not event.stmt.loops:
            continue
        for view, found in _as_handed(event):
            if view.call is not None and retains_graph(view) and (found is None or view.tensor is not None):
                yield view, found


def _helper_site(found: Reached, handed: str) -> str:
    where = place_in(found.module, found.event.stmt.node)
    return f"`{found.event.stmt.scope.name}()` ({where}) runs `backward(retain_graph=True)` on the `{handed}` handed in here"


def _graph_built_in_the_call(call: Event, found: Reached, caller_flow: DataFlow) -> bool:
    """The called function's backward runs through a graph that only this call can reach: the
    function is called directly by the loop and runs no loop around the backward, no later
    backward and no `torch.autograd.grad`; every value the backward runs through is made in the
    call, from arguments that carry no graph (the loop's batch) or attributes the class never
    sets to a graph; and the call neither returns a graph nor keeps one on the object."""
    helper, module = found.event.stmt.scope, found.module
    if call.call is None or call.callee is None or len(found.calls) != 1 or found.event.stmt.loops:
        return False
    if any(e.kind == BACKWARD and e.order > found.event.order for e in module.direct[id(helper)]):
        return False
    if any(method_of(site.call)[1] == "grad" for site in helper.calls):
        return False
    ancestry = ancestry_definitions(helper, found.event, into_outputs=True)
    params = {name for name in ancestry if name in helper.params and name not in {"self", "cls"}}
    if any(not definitions and name not in params and _may_carry(name, helper, module) for name, definitions in ancestry.items()):
        return False
    # Every call in sight hands the function values with no graph (a second caller may hand it
    # features that several calls backward through).
    sites = [(call.call, call.stmt, caller_flow)]
    sites += [(site.call, site.stmt, module.flow) for site in module.flow._calls_of(helper)]
    sites += [(site.call, site.stmt, flow) for site, flow in module.flow.calls_from_importers(helper)]
    for site_call, site_stmt, flow in sites:
        bound = bound_arguments(site_call, Callee(helper, module))
        if bound is None or any(name not in bound or flow.carries_graph(bound[name], site_stmt) for name in params):
            return False
    if any(module.flow.carries_graph(value, stmt) for value, stmt in helper.returns):
        return False
    return not (
        _object_keeps_a_graph(helper, module) or _fills_what_outlives_it(helper, module)
        or _runs_an_object_that_keeps_a_graph(helper, module)
    )


def _fills_what_outlives_it(helper: Scope, module: AnalysedModule) -> bool:
    """`losses.append(loss)` into a list handed in or a global: the caller may backward it."""
    def outlives(root: str) -> bool:
        return root != "self" and (root in helper.params or not helper.definitions(root))

    return _fills_with_a_graph(helper, module, outlives)


def _fills_with_a_graph(scope: Scope, module: AnalysedModule, holder: Callable[[str], bool]) -> bool:
    """A call of `scope` that fills a container (`x.append(v)`, `x.update(...)`) whose root name
    `holder` accepts, with a graph-carrying value."""
    for site in scope.calls:
        receiver, method = method_of(site.call)
        held = dotted(receiver) if receiver is not None else None
        if held is None or method not in FILLING_METHODS or not holder(held.split(".", 1)[0]):
            continue
        values = [*site.call.args, *(kw.value for kw in site.call.keywords)]
        if any(module.flow.carries_graph(value, site.stmt) for value in values):
            return True
    return False


def _runs_an_object_that_keeps_a_graph(helper: Scope, module: AnalysedModule) -> bool:
    """A project class the function runs (`self.model(x)` of a model whose `forward` keeps
    `self.state`): its next forward may run through this call's graph."""
    for site in helper.calls:
        callee = module.resolver.resolve(site.call, helper) or module.resolver.forward_of(site.call, helper)
        if callee is not None and callee.scope is not helper and callee.scope.class_node is not None:
            if callee.scope.class_node is not helper.class_node and _object_keeps_a_graph(callee.scope, callee.module):
                return True
    return False


def _object_keeps_a_graph(helper: Scope, module: AnalysedModule) -> bool:
    """Some method of the class sets or fills an attribute with a graph-carrying value (`self.h =
    out`, `self.history.append(loss)`): a later call may run backward through it."""
    for scope in helper.class_scopes or [helper]:
        for name, definitions in scope.defs.items():
            if name.startswith("self.") and any(module.flow.definition_carries(d) for d in definitions):
                return True
        for stmt in scope.stmts:
            node = stmt.node
            if isinstance(node, ast.Assign) and any((subscript_holder(t) or "").startswith("self.") for t in node.targets):
                if module.flow.carries_graph(node.value, stmt):
                    return True  # `self.by_step[i] = loss`
        if _fills_with_a_graph(scope, module, lambda root: root == "self"):
            return True  # `self.history.append(loss)`
    return False


def _kept_by_called_steps(facts: ModuleFacts) -> Iterator[Violation]:
    """The last backward of a function a loop calls every iteration (an agent's `train(batch)`)
    that keeps a graph built in that call, which nothing outside the call can reach."""
    reported: set[int] = set()
    for sf in facts.scopes:
        for event in sf.events:
            if event.kind != BACKWARD or not event.stmt.loops or event.callee is None:
                continue
            for found in reached(event, BACKWARD):
                if not retains_graph(found.event) or id(found.event.call) in reported:
                    continue
                if _handed_tensor(event, found) is not None:
                    continue  # a tensor handed in: judged at the call, where the caller's loop shows its reuse
                if not _graph_built_in_the_call(event, found, facts.flow):
                    continue
                reported.add(id(found.event.call))
                assert found.event.call is not None
                message = (
                    f"`retain_graph=True` keeps the graph of this call of `{found.event.stmt.scope.name}()` "
                    f"({found.path('every iteration')}) alive after its last backward, but the graph is built "
                    "in the call and nothing outside it can reach it: no later backward goes through it, and its "
                    "saved activations stay alive until the call returns"
                )
                fix = None
                if found.module is facts.analysed:  # the removal is offered only in the checked file
                    edit = remove_keyword(facts.source, found.event.call, "retain_graph")
                    fix = Fix("Remove `retain_graph=True`", "unsafe", (edit,)) if edit is not None else None
                violation = located(CODE, facts, found.module, message, found.event.call, fix)
                if violation is not None:
                    yield violation


def check(facts: ModuleFacts) -> Iterator[Violation]:
    yield from _kept_by_called_steps(facts)
    for sf in facts.scopes:
        for event, through in _retaining(sf):
            assert event.call is not None
            outer = event.stmt.loops[0]
            if checking_test_loop(sf.scope, [s for s in sf.scope.stmts if outer.contains(s)], facts.analysed.path):
                continue  # a test running backward once per case: no graph outlives what it checks
            later = [view for e in _later_backwards(event, sf.events, outer) for view, _ in _as_handed(e)]
            if any(view.tensor is None and view.helper for view in later):
                continue  # a called backward of a tensor not in sight may run through this graph
            following = _next_through_the_same_graph(event, later, sf, facts) if later else None
            if following is None:  # one that may meet this graph on some branch of an `if`
                following = min(
                    (other for other in later if _may_meet_on_a_branch(event, other, sf, facts)),
                    key=lambda e: e.order, default=None,
                )
            repeating = _repeating_loop(event, sf.events)
            removable = False
            if following is not None:
                # A second backward in the iteration: needed only if the gradients are used in between.
                if _gradients_used(facts, sf.events, _between(sf, outer, event.order, following.order)):
                    continue
                reason = (
                    f"nothing reads or changes the gradients before the next backward (line "
                    f"{getattr(following.stmt.node, 'lineno', 0)}): one backward of the summed losses gives the same gradients"
                )
            elif repeating is not None and _shares_graph(event, repeating, sf, facts) and (
                repeating is not outer or _loss_names(event.tensor) & set(repeating.targets)
            ):
                # (`for loss in losses:` over losses of one graph built before the loop, PCGrad)
                # One backward per head of a shared graph: only summed unless the gradients are read per pass.
                body = [s for s in sf.scope.stmts if repeating.contains(s) and s.node is not event.stmt.node]
                if _gradients_used(facts, sf.events, body):
                    continue
                reason = (
                    "the loop's passes through the shared graph only add up their gradients: one backward of "
                    "the summed losses after the loop gives the same gradients"
                )
            else:
                if any(method_of(site.call)[1] == "grad" and outer.contains(site.stmt) for site in sf.scope.calls):
                    continue  # torch.autograd.grad in the same iteration may reuse the graph
                if any(_graph_from_before(event, sf, facts, loop) is not None for loop in event.stmt.loops):
                    continue  # the next iteration's backward (of this loop or an inner one) goes through it again
                if _yielded_by_a_generator(event, sf, facts):
                    continue
                reason = "no later backward in the iteration goes through it"
                removable = True
            chained = _chains(event, sf, facts, outer)
            cost = (
                f"and `{chained}` carries it into the next iteration, so the held graphs grow without bound"
                if chained else "one extra graph held per iteration"
            )
            fix = None
            if through is not None:
                # A called function's pass is judged only where nothing runs through its graph
                # again: a second pass may need the gradients it left (read by hooks out of sight).
                if removable:
                    handed = facts.source.segment(event.tensor) if event.tensor is not None else "value"
                    yield Violation(CODE, f"{_helper_site(through, handed)}, but {reason}: {cost}", event.call)
                continue
            if removable:
                edit = remove_keyword(facts.source, event.call, "retain_graph")
                fix = Fix("Remove `retain_graph=True`", "unsafe", (edit,)) if edit is not None else None
            yield Violation(
                CODE,
                f"`retain_graph=True` keeps the graph alive after this backward, but {reason}: {cost}",
                event.call,
                fix,
            )
