"""ACC007 zero-grad-inside-window: gradients zeroed every micro-step while the step is gated."""

from __future__ import annotations

from typing import Iterator

from accumlint import frameworks
from accumlint.analysis import ModuleFacts, accumulators
from accumlint.analysis.events import SCHED, STEP, UPDATE, ZERO
from accumlint.analysis.passes import zeroed_each_pass
from accumlint.analysis.windows import dedented_backwards
from accumlint.model import Fix, Violation
from accumlint.rules.common import micro_step_zeroings, zeroed_before_last_backward
from accumlint.rules.window_moves import move_into_step_block
from accumlint.rules.meta import FixSafety

CODE = "ACC007"
NAME = "zero-grad-inside-window"
SUMMARY = "gradients are zeroed every micro-step while the step is gated"
FIX: FixSafety = "safe"


def check(facts: ModuleFacts) -> Iterator[Violation]:
    seen: set[int] = set()
    for sf in facts.scopes:
        for window in sf.windows:
            for event in micro_step_zeroings(facts, sf.events, window):
                if id(event.stmt) in seen:
                    continue
                seen.add(id(event.stmt))
                what = f"`{event.helper}()` zeroes gradients" if event.helper else "gradients are zeroed"
                reaches = "reaches optimizer.step()"
                if event.framework in frameworks.GRAPH_FREE_FRAMEWORKS:  # accumulator variables (Keras)
                    what, reaches = "the accumulated gradients are set back to zero", "is applied"
                fix = None
                if event.call is not None and not event.helper:
                    zeroed_in_block = any(e.kind == ZERO and window.in_step_block(e.stmt) for e in sf.events)
                    changes = move_into_step_block(
                        facts.source, event, window, sf.events, {STEP, UPDATE, SCHED}, zeroed_in_block
                    )
                    if changes:
                        fix = Fix("Move the zeroing into the step block, after the step", "safe", changes)
                yield Violation(
                    CODE,
                    f"{what} every micro-step while the step runs once per window: only the last "
                    f"micro-batch's gradient {reaches}",
                    event.stmt.node,
                    fix,
                )
        for window, zero, gate in zeroed_before_last_backward(sf):
            if id(zero.stmt) in seen:
                continue
            seen.add(id(zero.stmt))
            yield Violation(
                CODE,
                f"gradients are zeroed under the step's own gate `{facts.source.segment(gate.test)}`, "
                f"before this micro-step's backward: the last micro-step of each window wipes the gradients "
                f"of the ones before it, so only the last micro-batch's gradient reaches optimizer.step(); "
                f"zero at the window's first micro-step, or after the step",
                zero.stmt.node,
            )
        for found in zeroed_each_pass(sf.scope, sf.events, sf.pass_loops()):
            if id(found.zero.stmt) in seen:
                continue
            seen.add(id(found.zero.stmt))
            what = f"`{found.zero.helper}()` zeroes gradients" if found.zero.helper else "gradients are zeroed"
            line = getattr(found.loop.node, "lineno", "?")
            step_line = getattr(found.step.stmt.node, "lineno", "?")
            yield Violation(
                CODE,
                f"{what} on every pass of the loop at line {line}, each of which runs backward, while the "
                f"optimizer steps once after that loop (line {step_line}): only the last pass's gradient reaches "
                f"the step; zero once before the loop",
                found.zero.stmt.node,
            )
        for dedented in dedented_backwards(sf.scope, sf.events):
            # The backward sits after the micro-batch loop: the same loss of a window, another cause.
            call = dedented.backward.call
            line = getattr(dedented.micro_loop.node, "lineno", "?")
            yield Violation(
                CODE,
                f"backward runs after the micro-batch loop (line {line}), on the `{dedented.name}` of its last "
                f"micro-batch only: the other micro-batches never reach backward, and only the last "
                f"micro-batch's gradient reaches optimizer.step(); call backward inside that loop",
                call if call is not None else dedented.backward.stmt.node,
            )
    for accumulator, stmt, micro in accumulators.window_resets(facts):
        # Accumulators whose window is kept by a `tf.cond` (Keras): report only.
        if id(stmt) not in seen:
            yield Violation(
                CODE,
                f"the accumulated gradients `{accumulator.name}` are set back to zero on every call of "
                f"`{micro.name}` while they are applied once per window: only the last micro-batch's gradient "
                f"is applied",
                stmt.node,
            )
