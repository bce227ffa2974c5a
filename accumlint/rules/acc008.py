"""ACC008 per-micro-step-schedule: the LR scheduler or scaler.update() runs every micro-step."""

from __future__ import annotations

from typing import Iterator

from accumlint.analysis import ModuleFacts
from accumlint.analysis.events import SCHED, STEP, UPDATE, Event
from accumlint.model import Fix, Violation
from accumlint.rules.common import under_accumulate
from accumlint.rules.window_moves import move_into_step_block
from accumlint.rules.meta import FixSafety

CODE = "ACC008"
NAME = "per-micro-step-schedule"
SUMMARY = "scheduler.step() or scaler.update() runs every micro-step"
FIX: FixSafety = "unsafe"


def _same_call_in(events: list[Event], event: Event, inside) -> bool:
    return any(e.kind == event.kind and e.receiver == event.receiver and inside(e.stmt) for e in events if e is not event)


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
                seen.add(id(event.stmt))
                anchors = {STEP} if event.kind == UPDATE else {STEP, UPDATE}
                already = _same_call_in(sf.events, event, window.in_step_block)
                changes = None if event.helper else move_into_step_block(
                    facts.source, event, window, sf.events, anchors, already
                )
                what = "`scaler.update()`" if event.kind == UPDATE else "the LR scheduler steps"
                if event.kind == UPDATE and event.receiver:
                    what = f"`{event.receiver}.update()` runs"
                elif event.receiver:
                    what = f"`{event.receiver}.step()` runs"
                k_text = facts.source.segment(window.k)
                yield Violation(
                    CODE,
                    f"{what} every micro-step while the optimizer steps once per window: "
                    f"the schedule advances `{k_text}` times too fast",
                    event.stmt.node,
                    Fix("Move it into the step block, after the step", "unsafe", changes) if changes else None,
                )
        for event in _unprepared_under_accumulate(facts, sf):
            if id(event.stmt) in seen:
                continue
            seen.add(id(event.stmt))
            yield Violation(
                CODE,
                f"`{event.receiver}.step()` runs every micro-batch under `accelerator.accumulate()` but "
                f"was not passed through `accelerator.prepare()`: it advances once per micro-batch, not per step",
                event.stmt.node,
            )
