"""ACC012 accumulation-not-applied: the code sets up accumulation over k > 1 (it divides the loss by
the accumulation steps, or reads them for an Accelerate loop) but the optimizer step is not held for
k micro-steps: it runs on every micro-step, or under a gate whose modulus is a logging or
progress-bar frequency."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Iterator, Optional

from accumlint.analysis import ModuleFacts, accumulators
from accumlint.analysis.collect import WITHS, Collected, Loop, Scope, Stmt
from accumlint.analysis.events import BACKWARD, CLIP, SCHED, STEP, UNSCALE, UPDATE, ZERO, Event
from accumlint.analysis.exprs import dotted, int_value, keyword, last_part, method_of, names_in
from accumlint.analysis.pinned import asserted_one_before, count_is_one_on_way
from accumlint.analysis.facts import ScopeFacts
from accumlint.analysis.reach import reached
from accumlint.analysis.windows import Window, flag_dests
from accumlint.frameworks import Framework, Role, accelerate
from accumlint.model import Violation
from accumlint.rules.meta import FixSafety

if TYPE_CHECKING:
    from accumlint.analysis.calls import AnalysedModule

CODE = "ACC012"
NAME = "accumulation-not-applied"
SUMMARY = "accumulation is set up for k > 1 but the optimizer step is not held for k micro-steps"
FIX: FixSafety = None

# `accum_loss`, `accumulated_grad_norm`: accumulators, not the number of micro-steps;
# `gradient_accumulation_plugin`, `accum_kwargs`: objects that carry it, not the number itself.
_NOT_K_WORDS = (
    "loss", "norm", "metric", "total", "sum", "mean", "avg", "grads", "acc_", "plugin", "kwargs", "config",
    "handler", "enabled", "state",
)
# A name in a condition that changes from one micro-step to the next.
_PER_STEP_WORDS = (
    "step", "iter", "sync", "accum", "boundary", "update", "micro", "count", "idx", "index", "batch",
    "last", "end", "done", "should", "flag", "ready", "now", "apply", "tick", "nan", "inf", "finite",
)
_PREDICATES = frozenset({"isinstance", "hasattr", "callable"})
# What a logging or progress-bar block calls.
_REPORTING_CALL_WORDS = frozenset({
    "print", "log", "logger", "logging", "info", "progress", "pbar", "tqdm", "postfix", "description",
    "scalar", "scalars", "wandb", "writer", "tensorboard", "display",
})


def _accumulation_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    if "accum" in last:
        return not any(word in last for word in _NOT_K_WORDS)
    # `grad_acc_step`, `gradient_acc_steps`: "acc" beside "grad" counts accumulation, not accuracy
    tokens = set(last.split("_"))
    return "acc" in tokens and bool(tokens & {"grad", "gradient"}) and not any(
        word in last for word in _NOT_K_WORDS if word != "acc_"
    )


def _subscript_key(value: Optional[ast.expr]) -> bool:
    """`ds_config["gradient_accumulation_steps"]`."""
    if not isinstance(value, ast.Subscript):
        return False
    key = value.slice
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and _accumulation_name(key.value)


def _bound_to_one(name: str, collected: Collected) -> bool:
    """Every assignment of the name is a literal 1 (or 0): no window at all. So is an object's
    field that every construction of the object sets so (`accelerator.gradient_accumulation_steps`
    with `accelerator = Accelerator(..., gradient_accumulation_steps=1)`)."""
    definitions = [d for scope in collected.scopes for d in scope.definitions(name)]
    if not definitions:
        owner, _, field = name.rpartition(".")
        built = [d for scope in collected.scopes for d in scope.definitions(owner)] if owner else []
        return bool(built) and all(
            d.kind == "assign" and isinstance(d.value, ast.Call) and last_part(dotted(d.value.func)) == "Accelerator"
            and (given := keyword(d.value, field)) is not None and (value := int_value(given)) is not None and value <= 1
            for d in built
        )
    values = [int_value(d.value) if d.kind == "assign" else None for d in definitions]
    return all(v is not None and v <= 1 for v in values)


def accumulation_names(collected: Collected) -> set[str]:
    """Names that read as the accumulation steps (`args.gradient_accumulation_steps`,
    `self.cfg.grad_accum`, `accum_steps`, `gas = cfg["gradient_accumulation_steps"]`), and the names
    assigned from them or they from, minus those only ever bound to a literal 1. Remembered per
    module: every module that calls into this one asks again."""
    found = collected.memo.get("acc012.accumulation_names")
    if not isinstance(found, frozenset):
        found = collected.memo["acc012.accumulation_names"] = frozenset(_find_accumulation_names(collected))
    return set(found)


def _find_accumulation_names(collected: Collected) -> set[str]:
    found: set[str] = set()
    calls = (site.call for scope in collected.scopes for site in scope.calls)
    dests = flag_dests(calls, _accumulation_name)  # `--gradient-accumulation-steps` with dest="gas"
    for scope in collected.scopes:
        for occurrence in scope.occurrences:
            owner, _, last = occurrence.name.rpartition(".")
            if _accumulation_name(occurrence.name) or owner and last in dests:
                found.add(occurrence.name)
        for name, definitions in scope.defs.items():
            if _accumulation_name(name) or any(_subscript_key(d.value) for d in definitions if d.kind == "assign"):
                found.add(name)
    for _ in range(3):
        grown = set(found)
        for scope in collected.scopes:
            for target, definitions in scope.defs.items():
                for definition in definitions:
                    source = dotted(definition.value) if definition.kind == "assign" else None
                    if source is None:
                        continue
                    if source in found:
                        grown.add(target)
                    elif target in found:
                        grown.add(source)
        if grown == found:
            break
        found = grown
    return {name for name in found if not _bound_to_one(name, collected)}


# --- is the step held by anything? --------------------------------------------------------------

def _changing_names(scope: Scope, loop: Optional[Loop]) -> set[str]:
    """Names (re)bound inside the loop, or for a function entered once per micro-step, its
    parameters and everything it binds."""
    names: set[str] = set()
    if loop is None or loop.implicit:
        names.update(scope.params)
    for name, definitions in scope.defs.items():
        if any(d.kind != "param" and (loop is None or loop.contains(d.stmt)) for d in definitions):
            names.add(name)
    return names


def _fixed_condition(test: ast.expr, changing: set[str]) -> bool:
    """A condition that is the same on every micro-step: a setting (`if args.fp16:`,
    `if scaler is not None:`), nothing that counts, calls or reads per-step state."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and dotted(node.func) not in _PREDICATES:
            return False
        if isinstance(node, (ast.BinOp, ast.NamedExpr)) and not isinstance(getattr(node, "op", None), ast.BitOr):
            return False
    for name in names_in(test):
        if name in changing or any(part in changing for part in _prefixes(name)):
            return False
        if any(word in name.lower() for word in _PER_STEP_WORDS):
            return False
    return True


def _prefixes(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _held(
    stmt: Stmt, loop: Optional[Loop], stop: Optional[ast.AST], whole: frozenset[tuple[int, str]] = frozenset()
) -> bool:
    """Something per-step decides whether `stmt` runs: an `if` on its path (inside `stop`, the
    loop), or an earlier conditional `continue` of that loop."""
    changing = _changing_names(stmt.scope, loop)
    inside = stop is None
    for node, branch in stmt.path:
        if node is stop:
            inside = True
            continue
        if not inside:
            continue
        if isinstance(node, ast.If) and (id(node), branch) not in whole and not _fixed_condition(node.test, changing):
            return True
        if isinstance(node, (ast.match_case, ast.Match)):
            return True
    if loop is None:
        return False
    for other in stmt.scope.stmts:
        if isinstance(other.node, ast.Continue) and other.loop is loop and other.order < stmt.order:
            if any(isinstance(n, ast.If) and not _fixed_condition(n.test, changing) for n, _ in other.path):
                return True
    return False


def _returns_after_backward(stmt: Stmt, module: "AnalysedModule") -> bool:
    """`loss.backward(); if self.micro_step + 1 != k: return; optimizer.step()` in a function
    called every micro-step: a conditional return between a backward and the statement holds the
    statement apart (a return before every backward skips the whole micro-step, and holds nothing)."""
    scope = stmt.scope
    changing = _changing_names(scope, None)
    returns = [
        other.order for other in scope.stmts
        if isinstance(other.node, ast.Return) and other.order < stmt.order
        and any(isinstance(n, ast.If) and not _fixed_condition(n.test, changing) for n, _ in other.path)
    ]
    if not returns:
        return False
    backwards = [e.stmt.order for e in module.direct[id(scope)] if e.kind == BACKWARD]
    for site in scope.calls:
        callee = module.resolver.resolve(site.call, scope)
        if callee is not None and callee.scope is not scope and BACKWARD in module.resolver.kinds(callee):
            backwards.append(site.stmt.order)
    return any(b < r for b in backwards for r in returns)


def _around_every_backward(sf: ScopeFacts, loop: Loop) -> frozenset[tuple[int, str]]:
    """The `if`s of the loop that hold every backward of it (`if loss is not None:` around the
    backward and the step): they skip a whole micro-step, so they hold no step apart from its
    backward."""
    backwards = [e for e in sf.events if e.kind == BACKWARD and e.stmt.loop is loop]
    if not backwards:
        return frozenset()
    common = {(id(node), branch) for node, branch in backwards[0].stmt.path if isinstance(node, ast.If)}
    for event in backwards[1:]:
        common &= {(id(node), branch) for node, branch in event.stmt.path if isinstance(node, ast.If)}
    return frozenset(common)


def _step_runs_every_micro_step(event: Event, loop: Loop, whole: frozenset[tuple[int, str]] = frozenset()) -> bool:
    if _held(event.stmt, loop, loop.node, whole):
        return False
    if event.callee is None:
        return event.helper is None
    # A step inside a helper: every call on the way down, and the step itself, runs unconditionally.
    found = list(reached(event, STEP))
    if not found:
        return False
    for item in found:
        for holder, inner in zip(item.calls, (*item.calls[1:], item.event)):
            if inner.stmt.loops or _held(inner.stmt, None, None):
                return False
            if holder.callee is not None and _returns_after_backward(inner.stmt, holder.callee.module):
                return False
        if _framework_steps(item.event, item.module):
            return False
    return True


def _framework_steps(event: Event, module: "AnalysedModule") -> bool:
    """A DeepSpeed engine's `step()`, and an optimizer built to accumulate (Keras 3's
    `gradient_accumulation_steps`), apply once per window by themselves."""
    if event.framework == Framework.DEEPSPEED or module.roles.role(event.receiver) == Role.ENGINE:
        return True
    if event.kind != STEP:
        return False
    return accumulators.optimizer_window(event, module) is not None or accumulators.applies_accumulators(event, module)


# --- Accelerate ---------------------------------------------------------------------------------

def _accumulate_owner(stmt: Stmt, facts: ModuleFacts) -> Optional[str]:
    """The accelerator of a `with accelerator.accumulate(model):` around the statement."""
    for node, _ in stmt.path:
        if isinstance(node, WITHS):
            for item in node.items:
                if isinstance(item.context_expr, ast.Call):
                    receiver, method = method_of(item.context_expr)
                    name = dotted(receiver) if receiver is not None else None
                    if method == accelerate.ACCUMULATE_CONTEXT and facts.roles.role(name) == Role.ACCELERATOR:
                        return name
    return None


def _constructions(name: str, facts: ModuleFacts) -> list[tuple[Stmt, ast.Call]]:
    """Every statement of the module that builds the accelerator `name`, with its call."""
    return [
        (definition.stmt, definition.value)
        for scope in facts.collected.scopes for definition in scope.definitions(name)
        if definition.kind == "assign" and isinstance(definition.value, ast.Call)
    ]


def _constructor(name: str, facts: ModuleFacts) -> Optional[Stmt]:
    """The statement that built the accelerator, when it plainly received no accumulation steps:
    no such keyword, no `**kwargs`, no later `accelerator.gradient_accumulation_steps = ...`."""
    if name not in facts.roles.accelerator_gas or facts.roles.accelerator_gas[name] is not None:
        return None
    if any(scope.definitions(f"{name}.{accelerate.ACCUMULATION_STEPS_KEYWORD}") for scope in facts.collected.scopes):
        return None
    built = _constructions(name, facts)
    if any(keyword.arg is None for _, call in built for keyword in call.keywords):
        return None
    return built[-1][0] if built else None


def _dividing_accelerator(backwards: list[Event], facts: ModuleFacts) -> Optional[tuple[str, ast.expr]]:
    """The accelerator whose `backward` every one of these passes goes through, with the
    accumulation steps it was built with (it divides the loss by them on every call, inside
    `accumulate()` or not); None where a DeepSpeed plugin or `**kwargs` is in sight (DeepSpeed's
    engine holds its own window) or the steps come in a plugin."""
    receivers = {e.receiver for e in backwards if e.callee is None}
    if len(receivers) != 1 or any(e.callee is not None or e.framework != Framework.ACCELERATE for e in backwards):
        return None
    name = receivers.pop()
    if name is None or name in facts.roles.ambiguous_gas or not facts.roles.accumulating_accelerator(name):
        return None
    calls = [call for _, call in _constructions(name, facts)]
    if any(kw.arg is None or "deepspeed" in kw.arg for call in calls for kw in call.keywords):
        return None
    steps = next((given for call in reversed(calls) if (given := keyword(call, accelerate.ACCUMULATION_STEPS_KEYWORD)) is not None), None)
    return (name, steps) if steps is not None else None


def _steps_under_accumulate(scope: Scope, facts: ModuleFacts) -> bool:
    """The function enters some accelerator's `accumulate()` (around another loop or another step),
    or a call in the module that runs it sits inside one (`with self.accelerator.accumulate(model):
    self._train_step(batch)`): the author knows the context; which statements it should hold is
    not clear from here."""
    if any(method_of(site.call)[1] == accelerate.ACCUMULATE_CONTEXT for site in scope.calls):
        return True
    resolver = facts.analysed.resolver
    return scope.class_node is not None and any(
        _accumulate_owner(site.stmt, facts) is not None and (callee := resolver.resolve(site.call, caller.scope)) is not None
        and callee.scope is scope
        for caller, site in facts.calls_named(scope.name)
    )


def _reads_deepspeed_plugin(facts: ModuleFacts) -> bool:
    """The module reads its accelerator's DeepSpeed plugin (`accelerator.state.deepspeed_plugin`):
    it runs under DeepSpeed, whose engine divides and steps once per window behind
    `accelerator.backward`, with k from the launch config."""
    return facts.cached(
        "acc012.deepspeed_plugin",
        lambda: any(".deepspeed_plugin" in f"{o.name}." for scope in facts.collected.scopes for o in scope.occurrences),
    )


def _framework_accumulates(event: Event, facts: ModuleFacts) -> bool:
    if event.framework == Framework.ACCELERATE:
        return facts.roles.accumulating_accelerator(event.receiver) or _reads_deepspeed_plugin(facts)
    return event.framework in {Framework.DEEPSPEED, Framework.LIGHTNING_AUTO}


# --- evidence of accumulation --------------------------------------------------------------------

def _divided_backwards(
    sf: ScopeFacts, facts: ModuleFacts, names: set[str], backwards: list[Event]
) -> tuple[list[Event], bool]:
    """Which of these backward passes (here or in helpers) get a loss divided by the accumulation
    steps, and whether any of them runs through a framework that divides by itself."""
    divided: list[Event] = []
    framework = False
    for event in backwards:
        if event.callee is not None:
            for item in reached(event, BACKWARD):
                inner = item.event
                if inner.tensor is None:
                    continue
                if _framework_accumulates(inner, facts) or _framework_steps(inner, item.module):
                    framework = True
                    continue
                k_names = names | accumulation_names(item.module.collected)
                scaling = item.module.flow.scaling(inner.tensor, inner.stmt, k_names)
                if not scaling.unknown and scaling.k_divisions >= 1:
                    divided.append(event)
            continue
        if event.tensor is None or _summed_in_inner_loop(event):
            continue
        if _framework_accumulates(event, facts):
            framework = True
            continue
        scaling = facts.flow.scaling(event.tensor, event.stmt, names)
        if not scaling.unknown and scaling.k_divisions >= 1:
            divided.append(event)
    return divided, framework


def _window_inside(event: Event) -> bool:
    """A call (`self.train_step(batch)`) whose function runs backward in a loop of its own before it
    steps (`for chunk in batch.chunk(k): ... loss.backward()`): each call is a whole window, and one
    step per call is right."""
    if event.callee is None:
        return False
    found = list(reached(event, BACKWARD))
    return bool(found) and all(
        any(not loop.implicit for stmt in (item.event.stmt, *(c.stmt for c in item.calls[1:])) for loop in stmt.loops)
        for item in found
    )


def _summed_in_inner_loop(event: Event) -> bool:
    """`for chunk in batch.chunk(k): loss += f(chunk) / k` then one backward: the whole window goes
    through one backward, and one step per backward is right."""
    loop = event.stmt.loop
    if loop is None or event.tensor is None:
        return False
    for name in names_in(event.tensor):
        for definition in event.stmt.scope.definitions(name):
            inner = definition.stmt.loop
            if inner is not None and inner is not loop and loop.contains(definition.stmt):
                return True
    return False


def _k_text(facts: ModuleFacts, names: set[str], scope: Scope, loop: Optional[Loop]) -> str:
    """The accumulation steps as the code spells them, preferring a read inside the loop."""
    reads = [o for o in scope.occurrences if not o.write and o.name in names]
    inside = [o for o in reads if loop is not None and loop.contains(o.stmt)]
    for group in (inside, reads):
        if group:
            return max((o.name for o in group), key=lambda n: (n.count("."), len(n)))
    everywhere = sorted(names, key=lambda n: (-n.count("."), -len(n), n))
    return everywhere[0] if everywhere else "k"


def _counter(loop: Loop) -> Optional[str]:
    """The micro-step counter of `for step, batch in enumerate(loader)` or `for i in range(n)`."""
    node = loop.node
    if not isinstance(node, (ast.For, ast.AsyncFor)) or not isinstance(node.iter, ast.Call):
        return None
    func = dotted(node.iter.func)
    if func == "enumerate" and isinstance(node.target, ast.Tuple) and node.target.elts:
        return dotted(node.target.elts[0])
    if func == "range" and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _gate_text(counter: Optional[str], k: str) -> str:
    return f"if ({counter or 'step'} + 1) % {k} == 0:"


# What must move with the step into its window, in the order a message names them.
_COMPANIONS = ((UNSCALE, "the unscale"), (CLIP, "the clipping"), (UPDATE, "the scaler update"),
               (SCHED, "the scheduler step"))


def _window_advice(sf: ScopeFacts, loop: Loop, k: str, names: set[str]) -> str:
    """Where the step belongs: after a loop that is itself the window (`for _ in range(k)`),
    else under a `% k` gate on the micro-step counter after the backward; with it go the
    unscaling, clipping and schedule steps that run on every micro-step beside it, and the
    zeroing, which must come after the step (zeroing under the gate before the backward would
    wipe the window)."""
    kinds = {e.kind for e in sf.events if e.stmt.loop is loop and not _held(e.stmt, loop, loop.node)}
    moved = [text for kind, text in _COMPANIONS if kind in kinds]
    what = "the step" + (f", with {_listed(moved)}" if moved else "") + (", then the zeroing" if ZERO in kinds else "")
    what += "," if what != "the step" else ""
    node = loop.node
    if (
        isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call)
        and dotted(node.iter.func) == "range" and len(node.iter.args) == 1 and names_in(node.iter.args[0]) & names
    ):
        return f"move {what} after the loop over `range({k})` (line {node.lineno})"
    return f"run {what} under `{_gate_text(_counter(loop), k)}` after the backward"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- the rule ------------------------------------------------------------------------------------

def _every_micro_step(sf: ScopeFacts, facts: ModuleFacts, names: set[str]) -> Iterator[Violation]:
    src = facts.source
    for loop in sf.scope.loops:
        if any(w.step_loop is loop for w in sf.windows):
            continue
        steps = [e for e in sf.events if e.kind == STEP and e.stmt.step_loop is loop]
        if not steps or any(_framework_steps(e, facts.analysed) for e in steps):
            continue
        whole = _around_every_backward(sf, loop)
        if not all(_step_runs_every_micro_step(e, loop, whole) for e in steps):
            continue  # some step is held by a gate (read or not): other rules' ground
        if asserted_one_before(sf.scope, names, loop.header.order):
            continue  # `assert k == 1, "no accumulation here"` at the top of the function
        gate = _accumulation_gate(sf.scope, loop, names)
        steps = [e for e in steps if not _window_held(e, gate, sf.scope, names)]
        if not steps:
            continue
        step = steps[0]
        backwards = [
            e for e in sf.events
            if e.kind == BACKWARD and e.stmt.loop is loop and e.stmt.compatible(step.stmt)
        ]
        if not backwards or all(_window_inside(e) for e in backwards):
            continue
        divided, framework = _divided_backwards(sf, facts, names, backwards)
        step_text = src.segment(step.call) if step.call is not None else "the optimizer step"
        owner = _accumulate_owner(step.stmt, facts)
        if owner is not None:
            built = _constructor(owner, facts)
            if built is None or framework or not (divided or _reads_accumulation(facts, names)):
                continue
            k = _k_text(facts, names, sf.scope, loop)
            line = getattr(built.node, "lineno", "?")
            yield Violation(
                CODE,
                f"`{owner}` (line {line}) never received the accumulation steps, so "
                f"`with {owner}.accumulate(...)` lets `{step_text}` run on every micro-step while the "
                f"code accumulates over `{k}`: each update takes one micro-batch instead of `{k}`"
                f"{_schedule_note(sf, loop, names)}; pass `gradient_accumulation_steps={k}` to the Accelerator, "
                f"which then holds the step for `{k}` micro-steps",
                step.call or step.stmt.node,
            )
            continue
        dividing = _dividing_accelerator(backwards, facts)
        if dividing is not None and not _steps_under_accumulate(sf.scope, facts):
            accelerator, steps_given = dividing
            k = facts.source.segment(steps_given)
            yield Violation(
                CODE,
                f"`{accelerator}.backward` divides each loss by its accumulation steps `{k}`, but the loop never "
                f"enters `with {accelerator}.accumulate(...)`, so `{step_text}` runs on every micro-step: updates "
                f"are `{k}` times too small{_schedule_note(sf, loop, names)}; run the forward, backward and step "
                f"inside `with {accelerator}.accumulate(model):`",
                step.call or step.stmt.node,
            )
            continue
        if framework or _mode_switch(loop, names):
            continue
        k = _k_text(facts, names, sf.scope, loop)
        if divided:
            yield Violation(
                CODE,
                f"the loss is divided by the accumulation steps `{k}` but `{step_text}` runs on every "
                f"micro-step: updates are `{k}` times too small{_schedule_note(sf, loop, names)}; "
                f"{_window_advice(sf, loop, k, names)}",
                step.call or step.stmt.node,
            )
            continue
        if gate is not None:
            yield Violation(
                CODE,
                f"`{step_text}` runs on every micro-step, outside `if {src.segment(gate.test)}:` "
                f"(line {gate.lineno}), the block that tests the accumulation steps `{k}`: no gradients "
                f"accumulate{_schedule_note(sf, loop, names)}; move the step, with the zeroing and the "
                f"scheduler step, into that block",
                step.call or step.stmt.node,
            )
            continue
        sized = _sized_in_windows(facts, names)
        if sized is not None and not _repeats_the_same_step(sf.scope, loop):
            yield Violation(
                CODE,
                f"the code counts optimizer updates in windows of `{k}` (line {sized}) but `{step_text}` "
                f"runs on every micro-step: the accumulation steps are never applied"
                f"{_schedule_note(sf, loop, names)}; {_window_advice(sf, loop, k, names)}, and "
                f"divide the loss by `{k}`",
                step.call or step.stmt.node,
            )


def _window_held(event: Event, gate: Optional[ast.If], scope: Scope, names: set[str]) -> bool:
    """A step that cannot run on every micro-step of a window: inside the block that tests the
    accumulation steps (its counter moved in another method), or where the code makes k 1
    (`if params.amp == -1:` under `assert params.amp >= 0 or params.accumulate_gradients == 1`)."""
    if gate is not None and event.stmt.within(gate):
        return True
    return any(count_is_one_on_way(event.stmt, name, scope) for name in names)


def _repeats_the_same_step(scope: Scope, loop: Loop) -> bool:
    """`for _ in range(11): train_step(static_batch); optimizer_step()`: every iteration runs the
    same calls on the same values (nothing is bound in the loop, its target is never read, no
    `next()` draws a batch): a warm-up or a capture before the training loop, not a pass over data."""
    if any(loop.contains(d.stmt) for ds in scope.defs.values() for d in ds if d.name not in loop.targets):
        return False
    if any(o.name in loop.targets and not o.write and loop.contains(o.stmt) for o in scope.occurrences):
        return False
    return not any(dotted(site.call.func) == "next" and loop.contains(site.stmt) for site in scope.calls)


def _accumulation_gate(scope: Scope, loop: Loop, names: set[str]) -> Optional[ast.If]:
    """An `if` in the loop that tests the micro-step counter against the accumulation steps
    (`if actual_step % gradient_accumulation_steps == 0:`) while the step runs outside it: the code
    marks its windows and holds only the clipping or logging in them."""
    for stmt in scope.stmts:
        node = stmt.node
        if not isinstance(node, ast.If) or not loop.contains(stmt) or stmt.loop is not loop:
            continue
        for part in ast.walk(node.test):
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mod) and names_in(part.right) & names:
                return node
    return None


def _mode_switch(loop: Loop, names: set[str]) -> bool:
    """The loop sits in a branch chosen by the accumulation steps (`if k > 1: ... else: <this loop>`)."""
    return any(isinstance(node, ast.If) and bool(names_in(node.test) & names) for node, _ in loop.header.path)


def _sized_in_windows(facts: ModuleFacts, names: set[str]) -> Optional[int]:
    """A count divided by the accumulation steps outside any loop (`len(loader) // k`,
    `math.ceil(len(loader) / args.gradient_accumulation_steps)`): updates counted in windows.
    The line of the first one, or None."""
    lines = []
    for scope in facts.collected.scopes:
        values = [(d.value, d.stmt) for ds in scope.defs.values() for d in ds if d.kind in {"assign", "aug"}]
        values += [(kw.value, site.stmt) for site in scope.calls for kw in site.call.keywords]
        for value, stmt in values:
            if value is None or stmt.loops:
                continue
            for node in ast.walk(value):
                if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
                    if names_in(node.right) & names and not names_in(node.left) & names:
                        lines.append(getattr(stmt.node, "lineno", 0))
    return min(lines) if lines else None


def _schedule_note(sf: ScopeFacts, loop: Loop, names: set[str]) -> str:
    """A scheduler stepped with the step on every micro-step runs through a schedule sized in
    optimizer updates k times too fast. One built in micro-steps (`num_training_steps=max_steps *
    k`) is another story, which depends on where the loop stops: no claim then."""
    scheds = [e for e in sf.events if e.kind == SCHED and loop.contains(e.stmt)]
    if not scheds or any(_sized_in_micro_steps(e.receiver, sf.scope, names) for e in scheds):
        return ""
    return ", and a schedule sized in optimizer updates ends early"


def _sized_in_micro_steps(receiver: Optional[str], scope: Scope, names: set[str]) -> bool:
    """The scheduler's construction multiplies a length by the accumulation steps."""
    if receiver is None:
        return False
    for seen in scope.sight():
        for definition in seen.definitions(receiver):
            value = definition.value if definition.kind == "assign" else None
            if not isinstance(value, ast.Call):
                continue
            for node in ast.walk(value):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and names_in(node) & names:
                    return True
    return False


def _reads_accumulation(facts: ModuleFacts, names: set[str]) -> bool:
    return any(
        not o.write and o.name in names for scope in facts.collected.scopes for o in scope.occurrences
    )


def _reporting_block(window: Window) -> bool:
    """The gate's block shows progress or logs (`progress_bar.update(1)`, `print(...)`)."""
    if window.gate is None or window.branch is None:
        return False
    block = window.gate.body if window.branch == "body" else window.gate.orelse
    for statement in block:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                name = dotted(node.func) or ""
                words = set(re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()))
                if words & _REPORTING_CALL_WORDS:
                    return True
    return False


def _same_literal(window: Window, names: set[str], collected: Collected) -> bool:
    """`% 8` with `ACCUM = 8`: the gate is the window after all."""
    size = int_value(window.k)
    if size is None:
        return False
    for name in names:
        values = [
            int_value(d.value) for scope in collected.scopes for d in scope.definitions(name) if d.kind == "assign"
        ]
        if size in values:
            return True
    return False


def _misplaced_gate(sf: ScopeFacts, facts: ModuleFacts, names: set[str]) -> Iterator[Violation]:
    src = facts.source
    for window in sf.windows:
        if window.form != "gate" or window.gate is None or window.k_names & names:
            continue
        if not window.reporting_gate and (_same_literal(window, names, facts.collected) or not _reporting_block(window)):
            continue
        if int_value(window.k) is None and not window.reporting_gate:
            continue  # a named modulus that is neither: unknown relation to k
        backwards = [e for e in sf.events if e.kind == BACKWARD and window.every_micro_step(e.stmt)]
        divided, framework = _divided_backwards(sf, facts, names, backwards)
        if framework or not (divided or window.reporting_gate and _reads_accumulation(facts, names)):
            continue
        k = _k_text(facts, names, sf.scope, window.micro_loop)
        step = window.step
        step_text = src.segment(step.call) if step.call is not None else "the optimizer step"
        counter = window.test.counter if window.test is not None else None
        counter_text = src.segment(counter) if counter is not None else None
        if counter is not None and isinstance(counter, ast.Name):
            counter_text = counter.id
        why = "a logging frequency" if window.reporting_gate else "the modulus of a logging or progress block"
        yield Violation(
            CODE,
            f"`{step_text}` runs only under `if {src.segment(window.gate.test)}:`, {why}, while the "
            f"{'loss is divided by' if divided else 'code reads'} the accumulation steps `{k}`: the step "
            f"block is misplaced and the optimizer "
            f"steps every `{src.segment(window.k)}` micro-steps instead of every `{k}`; hold the step in "
            f"`{_gate_text(counter_text, k)}`",
            step.call or step.stmt.node,
        )


def check(facts: ModuleFacts) -> Iterator[Violation]:
    if not any(e.kind == STEP for sf in facts.scopes for e in sf.events):
        return
    names = accumulation_names(facts.collected)
    for sf in facts.scopes:
        local = set(names)
        if not any(e.kind == STEP for e in sf.events):
            continue
        for site in sf.scope.calls:
            callee = facts.analysed.resolver.resolve(site.call, sf.scope)
            if callee is not None:
                local |= accumulation_names(callee.module.collected)
        if not local:
            continue
        yield from _every_micro_step(sf, facts, local)
        yield from _misplaced_gate(sf, facts, local)
