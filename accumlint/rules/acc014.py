"""ACC014 gradients-never-cleared: backward and the optimizer step run in a loop, but nothing in the
loop, its callees or its step block ever zeroes the gradients."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional

from accumlint import frameworks
from accumlint.analysis import ModuleFacts, accumulators
from accumlint.analysis.collect import Loop, Scope, Stmt
from accumlint.analysis.calls import bind_arguments
from accumlint.analysis.events import BACKWARD, STEP, ZERO, Event
from accumlint.analysis.exprs import dotted, int_value, is_string, last_part, method_of, names_in, positional
from accumlint.analysis.facts import ScopeFacts
from accumlint.model import Fix, Violation
from accumlint.rules.common import checking_test_loop
from accumlint.rules.edits import insert_after
from accumlint.rules.meta import FixSafety

if TYPE_CHECKING:
    from accumlint.analysis.calls import AnalysedModule, Callee, Resolver

CODE = "ACC014"
NAME = "gradients-never-cleared"
SUMMARY = "backward and the optimizer step run in a loop that never zeroes the gradients"
FIX: FixSafety = "sometimes"

_MAX_CALL_DEPTH = 6
# A function or method whose name says it clears gradients, when the code of it is not in sight.
_CLEARING_WORDS = ("zero", "clear", "reset", "none", "free", "empty", "drop")


def _grad_name(name: Optional[str]) -> bool:
    """`p.grad`, `p.grad.data`, `param.grad.data.x`: the gradient of a tensor, or part of it."""
    if not name:
        return False
    parts = name.split(".")
    return "grad" in parts[1:]


def _clearing_name(name: str) -> bool:
    lowered = last_part(name).lower()
    return "grad" in lowered and any(word in lowered for word in _CLEARING_WORDS)


def _grad_target(target: ast.AST) -> bool:
    """An assignment or deletion target that writes a `.grad` (`p.grad[...] = 0` included)."""
    while isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_grad_target(element) for element in target.elts)
    current: ast.AST = target
    while isinstance(current, ast.Attribute):
        if current.attr == "grad":
            return True
        current = current.value
        while isinstance(current, (ast.Subscript, ast.Call)):
            current = current.value if isinstance(current, ast.Subscript) else current.func
    return False


def _stmt_writes_grad(stmt: Stmt) -> bool:
    node = stmt.node
    if isinstance(node, ast.Assign):
        return any(_grad_target(t) for t in node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return _grad_target(node.target)
    if isinstance(node, ast.Delete):
        return any(_grad_target(t) for t in node.targets)
    return False


def _call_clears(call: ast.Call) -> bool:
    """`p.grad.zero_()`, `p.grad.data.fill_(0)`, `setattr(p, "grad", None)`, `clear_grads(model)`."""
    receiver, method = method_of(call)
    if method is None:
        return False
    if receiver is not None and method.endswith("_") and _grad_target(receiver):
        return True
    if receiver is None and method == "setattr":
        attribute = positional(call, 1)
        return is_string(attribute) and getattr(attribute, "value", None) == "grad"
    return _clearing_name(method)


def _reads_grad(stmts: list[Stmt]) -> bool:
    """Some statement reads a `.grad` (comprehensions and generator expressions included)."""
    for stmt in stmts:
        if not stmt.is_statement:
            continue
        for expr in stmt.own_parts:
            if any(_grad_name(name) for name in names_in(expr)):
                return True
    return False


@dataclass
class _Reach:
    """What a loop reaches through the functions it calls."""

    clears: bool = False  # some zeroing, `.grad` write or unknown clearing helper
    reads_grad: bool = False  # some `.grad` read
    steps: list[Event] = field(default_factory=list)  # steps performed inside the callees
    unknown: bool = False  # a call into the project that could not be followed
    recreates: bool = False  # a callee builds the optimizer it steps


def _scope_clears(scope: Scope, stmts: list[Stmt], events: list[Event], calls: list[ast.Call]) -> bool:
    if any(e.kind == ZERO for e in events):
        return True
    if any(_stmt_writes_grad(s) for s in stmts):
        return True
    inside = {id(s) for s in stmts}
    for name, definitions in scope.defs.items():
        if _grad_name(name) and any(id(d.stmt) in inside for d in definitions):
            return True
    return any(_call_clears(call) for call in calls)


def _step_has_arguments(event: Event) -> bool:
    """`step(closure)` (LBFGS, SAM), `opt.step(context_id)` (distributed autograd), a scaler's step
    with a closure: gradients that the call itself computes or keeps apart."""
    call = event.call
    if call is None:
        return False
    allowed = 1 if event.scaler is not None else 0
    return len(call.args) > allowed or bool(call.keywords)


def _zeroing_step(event: Event, facts_roles) -> bool:
    name = event.receiver
    return name is not None and facts_roles.role(name) in frameworks.ZEROING_STEP_ROLES


def _follow(module: AnalysedModule, call: ast.Call, scope: Scope, reach: _Reach, seen: set[int], depth: int) -> None:
    """Add what a called function does (and what it calls, further down) to `reach`."""
    callee = module.resolver.resolve(call, scope)
    if callee is None:
        if module.resolver.points_into_project(call):
            reach.unknown = True
        return
    _follow_callee(callee, reach, seen, depth)


def _follow_callee(callee: Callee, reach: _Reach, seen: set[int], depth: int) -> None:
    inner = callee.scope
    if id(inner) in seen or depth > _MAX_CALL_DEPTH:
        return
    seen.add(id(inner))
    owner = callee.module
    direct = owner.direct.get(id(inner), [])
    calls = [site.call for site in inner.calls]
    if _scope_clears(inner, inner.stmts, direct, calls):
        reach.clears = True
    if _reads_grad(inner.stmts):
        reach.reads_grad = True
    for event in direct:
        if event.kind != STEP:
            continue
        reach.steps.append(event)
        if _step_has_arguments(event) or _zeroing_step(event, owner.roles):
            reach.clears = True
        name = event.optimizer or event.receiver
        if name and any(d.kind != "param" for d in inner.definitions(name)):
            reach.recreates = True
    if any(e.kind == BACKWARD and e.framework in frameworks.ZEROING_FRAMEWORKS for e in direct):
        reach.clears = True
    for site in inner.calls:
        _follow(owner, site.call, inner, reach, seen, depth + 1)


def _training_loop(step: Event, backwards: list[Event]) -> Optional[Loop]:
    """The innermost loop that holds both this step and a backward pass."""
    for loop in reversed(step.stmt.loops):
        if any(loop.contains(b.stmt) for b in backwards):
            return loop
    return None


def _runs_once(loop: Loop, stmts: list[Stmt]) -> bool:
    """`for _ in range(1)`, a body that ends in an unconditional `break` or `return`: a loop in form
    only."""
    body = getattr(loop.node, "body", None)
    if not loop.implicit and any(s.block is body and isinstance(s.node, (ast.Break, ast.Return, ast.Raise)) for s in stmts):
        return True
    iterable = loop.iter_expr
    if isinstance(iterable, ast.Call) and dotted(iterable.func) == "range" and len(iterable.args) == 1:
        count = int_value(iterable.args[0])
        return count is not None and count <= 1
    if isinstance(iterable, (ast.List, ast.Tuple)):
        return len(iterable.elts) <= 1
    return False


_CLOCKS = frozenset({"time", "perf_counter", "monotonic", "process_time", "perf_counter_ns", "time_ns"})
_MEASURING_NAMES = ("test", "bench", "profile", "measure", "speed", "time_")


def _timed_measurement(scope: Scope, loop: Loop) -> bool:
    """`def test_speed(...)` / `def benchmark(...)` that reads a clock before the loop and after it:
    the loop measures time or memory per step, and what the updates do to the weights is never
    used; a training function timed the same way keeps its finding (its name says it trains)."""
    if not scope.name.lower().lstrip("_").startswith(_MEASURING_NAMES):
        return False
    clock_reads = [
        site.stmt.order for site in scope.calls
        if last_part(dotted(site.call.func)) in _CLOCKS and not loop.contains(site.stmt)
    ]
    return any(o < loop.first_order for o in clock_reads) and any(o > loop.last_order for o in clock_reads)


def _fresh(definition) -> bool:
    """A definition that may bind a different object: anything but another name for the same one
    (`opt = self.opt`) or a getter of an optimizer that already exists (`self.optimizers()`)."""
    value = definition.value
    if definition.kind != "assign":
        return True
    if isinstance(value, (ast.Name, ast.Attribute)):
        return False
    if isinstance(value, ast.Call) and last_part(dotted(value.func)) in frameworks.OPTIMIZER_GETTERS:
        return False
    return True


def _defined_in(name: str, scope: Scope, loop: Loop) -> bool:
    return any(loop.contains(d.stmt) and _fresh(d) for d in scope.definitions(name))


def _made_in(name: str, scope: Scope, loop: Loop) -> bool:
    """`model` or, for `self.model`, the object that holds it, bound anew in the loop."""
    return _defined_in(name, scope, loop) or _defined_in(name.split(".")[0], scope, loop)


def _built_on(value: ast.expr) -> set[str]:
    """What an optimizer was built from: `SGD(model.parameters())` -> model, `make_opt(net)` -> net."""
    names: set[str] = set()
    if not isinstance(value, ast.Call):
        return names
    first = positional(value, 0)
    if first is not None:
        names |= {n for n in names_in(first) if n.count(".") <= 1}
    return names | _parameters_of(value)


def _parameters_of(value: Optional[ast.expr]) -> set[str]:
    """The models whose `.parameters()` (or `.named_parameters()`) an optimizer is built from."""
    names: set[str] = set()
    for name in names_in(value) if value is not None else ():
        for suffix in (".parameters", ".named_parameters"):
            if name.endswith(suffix):
                names.add(name[: -len(suffix)])
    return names


def _built_from(value: Optional[ast.expr], scope: Scope, resolver: Resolver) -> Optional[ast.expr]:
    """What builds the optimizer: `make_optimizer(model)` of the project read as the optimizer its
    one `return` builds, in the caller's names (`SGD(model.parameters())`)."""
    if isinstance(value, ast.Call):
        callee = resolver.resolve(value, scope)
        if callee is not None and len(callee.scope.returns) == 1:
            return bind_arguments(value, callee, callee.scope.returns[0][0])
    return value


def _recreated(step: Event, scope: Scope, loop: Loop, resolver: Resolver) -> bool:
    """The optimizer, or the model whose parameters it was built on, is made anew in the loop.
    A new optimizer over the parameters of a model made before the loop is no fresh start:
    gradients live on the parameters, so each step still applies the sum of all earlier ones."""
    name = step.optimizer or step.receiver
    if name is None:
        return False
    head = name.split(".")[0]
    if head != name and _defined_in(head, scope, loop):
        return True
    made_here = [d for d in scope.definitions(name) if loop.contains(d.stmt) and _fresh(d)]
    if made_here:
        for definition in made_here:
            models = _parameters_of(_built_from(definition.value, scope, resolver))
            if not models or any(_made_in(m, scope, loop) for m in models):
                return True
        return False
    current: Optional[Scope] = scope
    while current is not None:
        for definition in current.definitions(name):
            if definition.value is not None:
                for used in _built_on(definition.value):
                    if _made_in(used, scope, loop):
                        return True
        current = current.parent
    return False


def _clears_anywhere(facts: ModuleFacts) -> bool:
    """Some zeroing anywhere in the module (a framework hook may run it: precision first)."""
    for scope in facts.collected.scopes:
        direct = facts.analysed.direct.get(id(scope), [])
        if _scope_clears(scope, scope.stmts, direct, [site.call for site in scope.calls]):
            return True
    return False


def _loop_findings(facts: ModuleFacts, sf: ScopeFacts, loop: Loop, steps: list[Event]) -> Iterator[Violation]:
    scope = sf.scope
    in_loop = [e for e in sf.events if loop.contains(e.stmt)]
    stmts = [s for s in scope.stmts if loop.contains(s)]
    calls = [site for site in scope.calls if loop.contains(site.stmt)]
    direct = [e for e in in_loop if e.helper is None]
    if _runs_once(loop, stmts) or checking_test_loop(scope, stmts, facts.analysed.path) or _timed_measurement(scope, loop):
        return
    if _scope_clears(scope, stmts, direct, [site.call for site in calls]):
        one_sided = list(_zeroed_on_one_branch(facts, sf, loop, steps, in_loop, stmts))
        yield from one_sided or _unzeroed_optimizers(facts, sf, loop, steps, in_loop, stmts)
        return
    if any(e.kind == ZERO for e in in_loop):
        yield from _zeroed_on_one_branch(facts, sf, loop, steps, in_loop, stmts)  # zeroed in a helper
        return
    if any(e.kind == BACKWARD and e.framework in frameworks.ZEROING_FRAMEWORKS for e in in_loop):
        return
    if loop.implicit and (loop.entry or _clears_anywhere(facts)):
        return  # a framework hook, or a project step method whose driver (maybe elsewhere) may zero
    for step in steps:
        if step.helper is None and (
            _step_has_arguments(step) or _zeroing_step(step, facts.roles) or _recreated(step, scope, loop, facts.analysed.resolver)
        ):
            return
    wrapped: set[int] = set()  # steps of a project class wrapping the optimizer (`self.optim.step()`)
    for step in steps:
        wrapper = _wrapper_step(facts, step)
        if wrapper is not None:
            inside = _Reach()
            _follow_callee(wrapper, inside, {id(scope)}, 0)
            if inside.clears or inside.unknown:
                return  # its step zeroes (OpenNMT-style optimizer wrappers) or cannot be followed
            wrapped.add(id(step))
    reach = _Reach()
    seen: set[int] = {id(scope)}
    for site in calls:
        _follow(facts.analysed, site.call, scope, reach, seen, 0)
    if reach.clears or reach.unknown or reach.recreates:
        return
    first_step = min(s.order for s in steps)
    read_after = False  # a function called after the step reads `.grad`
    for site in calls:
        if site.stmt.order > first_step and not read_after:
            later = _Reach()
            _follow(facts.analysed, site.call, scope, later, {id(scope)}, 0)
            read_after = later.reads_grad

    zeroed_before = any(e.kind == ZERO and e.order < loop.first_order and not loop.contains(e.stmt) for e in sf.events)
    fix = {} if wrapped else _fixes(facts, sf, loop, steps, reach, read_after)  # no zero_grad() known on a wrapper
    for step in steps:
        message = _message(step, zeroed_before, _optimizer_of(step), wrapper=id(step) in wrapped)
        yield Violation(CODE, message, (step.call or step.stmt.node), fix.get(id(step)))


# Optimizer-like objects whose step averages weights and reads no gradient (`ema_optimizer.step()`).
_AVERAGING_WORDS = frozenset({"ema", "swa", "average", "averaged", "averaging", "polyak", "lookahead", "teacher"})


def _takes_gradients(facts: ModuleFacts, name: str) -> bool:
    """Named like an optimizer, not like a weight average, and not built here by a class that is
    not known to be an optimizer (`ema_opt = WeightEMA(model, ema_model)`)."""
    if set(re.split(r"[._]", name.lower())) & _AVERAGING_WORDS:
        return False
    if facts.roles.by_name.get(name) == frameworks.Role.OPTIMIZER:
        return True
    for scope in facts.collected.scopes:
        for definition in scope.defs.get(name, []):
            if isinstance(definition.value, ast.Call):
                return False  # built by a call whose result is not known to be an optimizer
    return True


def _unzeroed_optimizers(
    facts: ModuleFacts, sf: ScopeFacts, loop: Loop, steps: list[Event], in_loop: list[Event], stmts: list[Stmt]
) -> Iterator[Violation]:
    """Two optimizers step in the loop and only one is ever zeroed (a GAN whose generator's
    gradients add up): reported when every zeroing in sight is `<optimizer>.zero_grad()` on a
    named optimizer, so that what it clears is known, and nothing else can clear (no `.grad`
    write, no project call that zeroes or cannot be followed, no zeroing framework)."""
    roles = facts.roles
    zeros = [e for e in in_loop if e.kind == ZERO]
    if not zeros or any(e.helper or e.call is None or roles.role(e.receiver) != frameworks.Role.OPTIMIZER for e in zeros):
        return
    if any(_stmt_writes_grad(s) for s in stmts):
        return
    if any(e.kind == BACKWARD and e.framework in frameworks.ZEROING_FRAMEWORKS for e in in_loop):
        return
    zeroed = {e.receiver for e in zeros}
    missing = [
        s for s in steps
        if s.helper is None and s.optimizer and s.optimizer not in zeroed
        and roles.role(s.optimizer) == frameworks.Role.OPTIMIZER and _takes_gradients(facts, s.optimizer)
        and not (_step_has_arguments(s) or _zeroing_step(s, roles) or _recreated(s, sf.scope, loop, facts.analysed.resolver))
    ]
    if not missing or not any(s.optimizer in zeroed for s in steps):
        return
    cleared = set().union(*(_models_of(name, sf.scope) for name in zeroed if name))
    missing = [s for s in missing if not _cleared_by_others(_models_of(s.optimizer, sf.scope), cleared)]
    if not missing:
        return
    reach = _Reach()
    seen: set[int] = {id(sf.scope)}
    for site in sf.scope.calls:
        if loop.contains(site.stmt):
            _follow(facts.analysed, site.call, sf.scope, reach, seen, 0)
    if reach.clears or reach.unknown or reach.recreates:
        return
    others = ", ".join(sorted(f"`{name}`" for name in zeroed if name))
    for step in missing:
        yield Violation(
            CODE,
            f"`{step.optimizer}` steps after backward every iteration of this loop, but only {others} is zeroed: "
            f"`{step.optimizer}`'s gradients add up across all its updates, a window that is never reset "
            f"(add `{step.optimizer}.zero_grad()` before its backward or after its step)",
            step.call or step.stmt.node,
        )


def _models_of(optimizer: Optional[str], scope: Scope) -> set[str]:
    """The models whose parameters an optimizer in sight was built on (`Adam(chain(G.parameters(),
    D.parameters()))` -> G, D): zeroing their other optimizers clears its gradients too."""
    if optimizer is None:
        return set()
    return {
        model
        for seen in scope.sight()
        for definition in seen.definitions(optimizer)
        for model in _parameters_of(definition.value)
    }


def _cleared_by_others(models: set[str], cleared: set[str]) -> bool:
    """Every model this optimizer was built on is one a zeroed optimizer holds (none known: no)."""
    return bool(models) and models <= cleared


def _wrapper_step(facts: ModuleFacts, step: Event) -> Optional[Callee]:
    """The method a step on an instance of a project class runs (`self.optim.step()` with
    `self.optim = Optimizer(...)`), else None."""
    call = step.call
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    if step.helper is None:
        method = facts.flow.instance_method(call, step.stmt)
        return None if method is not None and _torch_optimizer_subclass(method) else method
    owner = dotted(call.func.value)
    if owner is not None and facts.analysed.resolver.instance_class(owner, step.stmt.scope) is not None:
        return None if step.callee is not None and _torch_optimizer_subclass(step.callee) else step.callee
    return None


def _torch_optimizer_subclass(method: Callee) -> bool:
    """A project optimizer built on one of torch's (`class BertAdam(torch.optim.Optimizer)`): it
    has torch's `zero_grad()`, so it is the optimizer itself, no wrapper around one."""
    cls = method.scope.class_node
    if cls is None:
        return False
    bases = method.module.resolver.library_bases(cls)
    return any(base.startswith("torch.optim.") and not base.startswith("torch.optim.lr_scheduler") for base in bases)


def _optimizer_of(step: Event) -> Optional[str]:
    return step.optimizer if step.optimizer else None


def _fixes(
    facts: ModuleFacts, sf: ScopeFacts, loop: Loop, steps: list[Event], reach: _Reach, read_after: bool
) -> dict[int, Fix]:
    """`<optimizer>.zero_grad()` after every step of the loop, or no fix at all: one optimizer, every
    step in sight, nothing reading `.grad` after the step."""
    if reach.steps or read_after or any(s.helper is not None for s in steps):
        return {}
    names = {_optimizer_of(s) for s in steps}
    if len(names) != 1 or None in names:
        return {}
    name = names.pop()
    assert name is not None
    first = min(s.order for s in steps)
    if _reads_grad([s for s in sf.scope.stmts if loop.contains(s) and s.order > first]):
        return {}
    fixes: dict[int, Fix] = {}
    for step in steps:
        stmt = step.stmt
        if not stmt.is_statement or stmt.node is None:
            return {}
        edit = insert_after(facts.source, stmt.node, [f"{name}.zero_grad()"])
        if edit is None:
            return {}
        fixes[id(step)] = Fix(f"Zero the gradients right after the step: `{name}.zero_grad()`", "safe", (edit,))
    return fixes


def _zeroed_on_one_branch(
    facts: ModuleFacts, sf: ScopeFacts, loop: Loop, steps: list[Event], in_loop: list[Event], stmts: list[Stmt]
) -> Iterator[Violation]:
    """`if args.fp16: optimizer.zero_grad(); ...backward... else: loss.backward()` with the step
    after both: every zeroing in the loop sits in one branch of an `if` on a setting the loop never
    changes, and the other branch runs a backward that nothing there clears (no zeroing, no
    `.grad` write, no project call that clears or cannot be followed, no zeroing framework). On
    that branch, every run of the loop, the gradients add up across all updates."""
    zeros = [e for e in in_loop if e.kind == ZERO]
    if loop.implicit or not zeros or any(_stmt_writes_grad(s) for s in stmts):
        return  # an entry method's driver, out of sight, may zero for both branches
    zero_calls = {id(e.call) for e in zeros}
    if any(_call_clears(site.call) for site in sf.scope.calls if loop.contains(site.stmt) and id(site.call) not in zero_calls):
        return
    branch = _common_branch(zeros, loop)
    if branch is None:
        return
    test, taken = branch
    changed = {name for name, bound in sf.scope.defs.items() if any(loop.contains(d.stmt) for d in bound)}
    if names_in(test.test) & (changed | set(loop.targets)) or any(isinstance(n, ast.Call) for n in ast.walk(test.test)):
        return  # a per-iteration test (`if i % k == 0:` zeroing at a window's start) is accumulation
    other = "orelse" if taken == "body" else "body"
    bare = [e for e in in_loop if e.kind == BACKWARD and (test, other) in e.stmt.path]
    if not bare or any(e.framework in frameworks.ZEROING_FRAMEWORKS for e in bare):
        return
    reach = _Reach()
    seen: set[int] = {id(sf.scope)}
    for site in sf.scope.calls:
        if loop.contains(site.stmt) and (test, other) in site.stmt.path:
            _follow(facts.analysed, site.call, sf.scope, reach, seen, 0)
    if reach.clears or reach.unknown or reach.recreates:
        return
    runs = [
        step for step in steps
        if step.helper is None and (test, taken) not in step.stmt.path
        and not (_step_has_arguments(step) or _zeroing_step(step, facts.roles))
    ]
    condition = " ".join(facts.source.segment(test.test).split())
    side = "holds" if taken == "body" else "does not hold"
    zero_line = getattr(zeros[0].stmt.node, "lineno", "?")
    for step in runs:
        called = dotted(step.call.func) if step.call is not None else None
        yield Violation(
            CODE,
            f"`{called or 'optimizer.step'}()` runs after backward every iteration of this loop, but the "
            f"gradients are zeroed only when `{condition}` {side} (line {zero_line}): on the "
            f"other branch every update applies the sum of all earlier gradients, a window that is never reset",
            step.call or step.stmt.node,
        )


def _common_branch(events: list[Event], loop: Loop) -> Optional[tuple[ast.If, str]]:
    """The innermost `if` inside `loop` under one branch of which every event lies."""
    shared: Optional[list[tuple[ast.If, str]]] = None
    for event in events:
        inside = [
            (node, branch) for node, branch in event.stmt.path
            if isinstance(node, ast.If) and not loop.header.within(node)  # not an `if` around the loop
        ]
        shared = inside if shared is None else [step for step in shared if step in inside]
    return shared[-1] if shared else None


def _message(step: Event, zeroed_before: bool, optimizer: Optional[str], wrapper: bool = False) -> str:
    if step.helper is not None:
        what = f"`{step.helper}()` runs the optimizer step every iteration of this loop, after backward"
    else:
        called = dotted(step.call.func) if step.call is not None else None
        what = f"`{called or 'optimizer.step'}()` runs after backward every iteration of this loop"
    when = (
        "the gradients are zeroed before the loop, never between its steps"
        if zeroed_before
        else "nothing in the loop, the functions it calls or its step block zeroes the gradients"
    )
    advice = (
        "zero the wrapped optimizer's gradients in that `step()` or right after it"
        if wrapper
        else f"add `{optimizer or 'optimizer'}.zero_grad()` after the step"
    )
    return (
        f"{what}, but {when}: every update applies the sum of all earlier gradients, a window that "
        f"is never reset ({advice})"
    )


def _stepped_in_its_own_loop(event: Event) -> bool:
    """A call of a function that steps inside a loop of its own (`run_epoch(...)`): that loop is
    judged where it is, not again at every call."""
    callee = event.callee
    if callee is None:
        return False
    return any(e.kind == STEP and e.stmt.loops for e in callee.module.direct[id(callee.scope)])


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        backwards = [e for e in sf.events if e.kind == BACKWARD]
        if not backwards:
            continue
        groups: dict[int, tuple[Loop, list[Event]]] = {}
        for event in sf.events:
            if event.kind != STEP or _stepped_in_its_own_loop(event):
                continue
            loop = _training_loop(event, backwards)
            if loop is None:
                continue
            groups.setdefault(id(loop), (loop, []))[1].append(event)
        for loop, steps in groups.values():
            yield from _loop_findings(facts, sf, loop, steps)
    for accumulator, applied in accumulators.never_reset(facts):
        # Gradients added up by hand (Keras/TensorFlow) in variables nothing sets back to zero.
        yield Violation(
            CODE,
            f"the gradients accumulated in `{accumulator.name}` are applied but never set back to zero: every "
            f"update applies the sum of all earlier gradients, a window that is never reset (reset them "
            f"after the apply)",
            applied.call,
        )
