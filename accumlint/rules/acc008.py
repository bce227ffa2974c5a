"""ACC008 per-micro-step-schedule: the LR scheduler or scaler.update() runs every micro-step."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterator, Optional

from accumlint.analysis import ModuleFacts
from accumlint.analysis.collect import Collected
from accumlint.analysis.events import SCHED, STEP, UPDATE, Event
from accumlint.analysis.exprs import dotted, keyword
from accumlint.analysis.reach import reached
from accumlint.analysis.schedules import UPDATES, Length, schedule_length
from accumlint.analysis.windows import Window
from accumlint.model import Fix, Origin, Violation
from accumlint.rules.common import disabled_scaler, under_accumulate
from accumlint.rules.window_moves import move_into_step_block
from accumlint.rules.meta import FixSafety
from accumlint.source import SourceText

CODE = "ACC008"
NAME = "per-micro-step-schedule"
SUMMARY = "scheduler.step() or scaler.update() runs every micro-step"
FIX: FixSafety = "unsafe"


def _same_call_in(events: list[Event], event: Event, inside) -> bool:
    return any(e.kind == event.kind and e.receiver == event.receiver and inside(e.stmt) for e in events if e is not event)


def _length(
    facts: ModuleFacts, event: Event, window: Optional[Window], collected: Optional[Collected] = None
) -> Optional[Length]:
    """The scheduler's length and its unit, when the code shows them (`collected`: the module of a
    helper the event sits in)."""
    if event.receiver is None:
        return None
    if window is not None:
        k_names = set(window.k_names)
    else:  # under accelerator.accumulate(): k is what the Accelerator was given
        k_names = {ast.unparse(gas) for gas in facts.roles.accelerator_gas.values() if gas is not None}
    micro_iter = window.micro_loop.iter_expr if window is not None else None
    in_block = window.in_step_block if window is not None else (lambda stmt: False)
    return schedule_length(
        event.receiver, event.stmt.scope, collected or facts.collected, k_names, in_block, micro_iter
    )


def _sized_in_updates(facts: ModuleFacts, length: Optional[Length], source: Optional[SourceText] = None) -> str:
    if length is None or length.unit != UPDATES:
        return ""
    line = length.expr.lineno
    return f"; its length (`{(source or facts.source).segment(length.expr)}`, line {line}) counts optimizer updates"


def _what(event: Event) -> str:
    if event.kind == UPDATE:
        return f"`{event.receiver}.update()` runs" if event.receiver else "`scaler.update()`"
    return f"`{event.receiver}.step()` runs" if event.receiver else "the LR scheduler steps"


def _consequence(event: Event, k_text: str) -> str:
    if event.kind == SCHED:
        return f"the schedule advances `{k_text}` times too fast and ends after a `{k_text}`-th of training"
    return "on a micro-step with no step an enabled GradScaler raises \"No inf checks were recorded prior to update\""


def _handed_by_loop(found) -> Optional[Event]:
    """The helper steps a scheduler that is its parameter, and the loop's own call hands it in, or
    one on `self` in a method of the loop's own object (a base class in another module): the event
    as if written at that call, on what the loop knows (its constructor is in the loop's sight)."""
    inner, call = found.event, found.calls[0]
    helper = inner.stmt.scope
    if len(found.calls) != 1 or call.call is None or inner.receiver is None:
        return None
    func = call.call.func
    if inner.receiver.startswith("self.") and isinstance(func, ast.Attribute) and dotted(func.value) == "self":
        return replace(inner, stmt=call.stmt)  # a base class's method: `self` is the loop's object
    if inner.receiver not in helper.params:
        return None
    params = helper.params[1:] if helper.class_node is not None and helper.params[:1] == ["self"] else helper.params
    index = params.index(inner.receiver) if inner.receiver in params else -1
    args = call.call.args
    if index < 0 or any(isinstance(arg, ast.Starred) for arg in args[: index + 1]):
        return None
    passed = args[index] if index < len(args) else keyword(call.call, inner.receiver)
    name = dotted(passed)
    return replace(inner, receiver=name, stmt=call.stmt) if name is not None else None


def _in_helpers(facts: ModuleFacts, sf, window: Window, event: Event, seen: set[int]) -> Iterator[Violation]:
    """A scheduler or scaler stepped inside a function called every micro-step: reported at that
    statement, in whichever module it is, with the calls that lead there; no fix (moving the
    statement would change the helper for every caller)."""
    for found in reached(event, event.kind):
        inner, module = found.event, found.module
        if id(inner.stmt) in seen or inner.receiver is None or not found.on_every_call():
            continue
        if module.source is None and module is not facts.analysed:
            continue
        source = facts.source if module is facts.analysed else module.source
        assert source is not None
        sized = ""
        if inner.kind == SCHED:
            sized = _sized_in_updates(facts, _length(facts, inner, window, module.collected), source)
            handed = _handed_by_loop(found)
            if not sized and handed is not None:  # `on_micro_step(scheduler)`: built beside the loop
                sized = _sized_in_updates(facts, _length(facts, handed, window))
                if sized and module is not facts.analysed and facts.analysed.path is not None:
                    sized = sized.replace(") counts", f" of `{facts.analysed.path.name}`) counts")
            if not sized:
                continue
        seen.add(id(inner.stmt))
        message = (
            f"{_what(inner)} every micro-step while the optimizer steps once per window{sized}: "
            f"{_consequence(inner, facts.source.segment(window.k))} ({found.path()})"
        )
        if module is facts.analysed:
            yield Violation(CODE, message, inner.stmt.node)
        elif module.path is not None:
            yield Violation(CODE, message, inner.stmt.node, origin=Origin(str(module.path), source))


def _unprepared_under_accumulate(facts: ModuleFacts, sf) -> Iterator[Event]:
    """Inside `accelerator.accumulate()`, a scheduler that did not go through prepare() steps every
    micro-batch (prepared ones skip while gradients accumulate)."""
    for event in sf.events:
        if event.kind != SCHED or event.helper or not under_accumulate(event.stmt, facts):
            continue
        if event.receiver in facts.roles.prepared:
            continue
        if any(facts.roles.accumulating_accelerator(name) for name in facts.roles.accelerator_gas):
            yield event


def check(facts: ModuleFacts) -> Iterator[Violation]:
    seen: set[int] = set()
    for sf in facts.scopes:
        for window in sf.windows:
            for event in sf.events:
                if event.kind not in {SCHED, UPDATE} or id(event.stmt) in seen:
                    continue
                if not window.every_micro_step(event.stmt) or under_accumulate(event.stmt, facts):
                    continue
                if event.kind == UPDATE and disabled_scaler(event.receiver, sf.scope):
                    continue  # a scaler built switched off records nothing and raises nothing
                if event.helper:
                    yield from _in_helpers(facts, sf, window, event, seen)
                    continue
                sized = ""
                if event.kind == SCHED:
                    # A schedule sized in micro-steps is stepped at the rate it was built for; one whose
                    # length is not in sight (a parameter, built elsewhere) may be either: silent.
                    sized = _sized_in_updates(facts, _length(facts, event, window))
                    if not sized:
                        continue
                seen.add(id(event.stmt))
                anchors = {STEP} if event.kind == UPDATE else {STEP, UPDATE}
                already = _same_call_in(sf.events, event, window.in_step_block)
                changes = move_into_step_block(facts.source, event, window, sf.events, anchors, already)
                k_text = facts.source.segment(window.k)
                yield Violation(
                    CODE,
                    f"{_what(event)} every micro-step while the optimizer steps once per window{sized}: "
                    + _consequence(event, k_text),
                    event.stmt.node,
                    Fix("Move it into the step block, after the step", "unsafe", changes) if changes else None,
                )
        for event in _unprepared_under_accumulate(facts, sf):
            if id(event.stmt) in seen:
                continue
            sized = _sized_in_updates(facts, _length(facts, event, None))
            if not sized:
                continue  # sized in micro-batches (`max_train_steps * k`) or not in sight
            seen.add(id(event.stmt))
            yield Violation(
                CODE,
                f"`{event.receiver}.step()` runs every micro-batch under `accelerator.accumulate()` but "
                f"was not passed through `accelerator.prepare()`{sized}: it advances once per micro-batch, "
                f"not per step",
                event.stmt.node,
            )
