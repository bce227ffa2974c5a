"""ACC004 clip-before-unscale: clipping gradients that the GradScaler still multiplies."""

from __future__ import annotations

from typing import Callable, Iterator, Optional

from accumlint.analysis import ModuleFacts
from accumlint.analysis.collect import Stmt
from accumlint.analysis.events import BACKWARD, CLIP, STEP, UNSCALE, Event
from accumlint.model import Fix, Violation
from accumlint.rules.edits import insert_before, remove
from accumlint.rules.meta import FixSafety

CODE = "ACC004"
NAME = "clip-before-unscale"
SUMMARY = "gradients are clipped while still multiplied by the GradScaler's scale"
FIX: FixSafety = "safe"


def _region(clip: Event, events: list[Event]) -> Optional[Callable[[Stmt], bool]]:
    """Where the clip's gradients were made: its outermost loop; or, in a function without a loop,
    the statements after a backward of this function that precedes the clip on its branch (one
    call makes and clips them: no caller can unscale them in between)."""
    if clip.stmt.loops:
        return clip.stmt.loops[0].contains
    backwards = [
        e for e in events
        if e.kind == BACKWARD and e.helper is None and e.order < clip.order and e.stmt.compatible(clip.stmt)
    ]
    if not backwards:
        return None
    start = backwards[-1].order
    return lambda stmt: stmt.order >= start


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        for clip in sf.events:
            if clip.kind != CLIP or clip.call is None or clip.self_unscaling or clip.helper:
                continue
            region = _region(clip, sf.events)
            if region is None:
                continue
            # The GradScaler step this clip precedes, on the same branch (AMP and non-AMP paths differ).
            scaler_steps = [
                e for e in sf.events
                if e.kind == STEP and e.scaler and e.order > clip.order and region(e.stmt)
                and e.stmt.compatible(clip.stmt)
            ]
            if not scaler_steps:
                continue
            step = scaler_steps[0]
            window = next((w for w in sf.windows if w.step_loop.contains(clip.stmt)), None)
            clip_in_block = window is None or window.in_step_block(clip.stmt)
            unscales = [
                e for e in sf.events
                if e.kind == UNSCALE and region(e.stmt) and e.stmt.compatible(clip.stmt)
                and (e.optimizer is None or step.optimizer is None or e.optimizer == step.optimizer)
            ]
            good = [
                u for u in unscales
                if u.order < clip.order
                and (window is None or window.in_step_block(u.stmt) == clip_in_block)
            ]
            if good:
                continue
            if not clip_in_block:
                reason = "runs every micro-step, on partial gradients the GradScaler still multiplies"
            elif unscales and all(u.order > clip.order for u in unscales):
                reason = f"comes before `{step.scaler}.unscale_()`: it clips scaled gradients"
            else:
                reason = f"runs on scaled gradients: `{step.scaler}.unscale_()` is not called before it"
            # One `unscale_` per optimizer and step: a second one raises. An earlier clip before the
            # same step carries the insertion, which then precedes this clip too.
            earlier_clip = any(
                e.kind == CLIP and e is not clip and not e.self_unscaling and e.order < clip.order
                and region(e.stmt) and e.stmt.compatible(clip.stmt)
                and (window is None or window.in_step_block(e.stmt) == clip_in_block)
                for e in sf.events
            )
            fix = None
            if clip_in_block and step.optimizer and clip.stmt.is_statement and not earlier_clip:
                insertion = insert_before(facts.source, clip.stmt.node, [f"{step.scaler}.unscale_({step.optimizer})"])
                edits = [insertion]
                for u in unscales:
                    edits.append(None if u.stmt.node is clip.stmt.node else remove(facts.source, u.stmt.node, u.stmt.block))
                if all(e is not None for e in edits):
                    fix = Fix(
                        f"Call `{step.scaler}.unscale_({step.optimizer})` right before clipping",
                        "safe",
                        tuple(e for e in edits if e is not None),
                    )
            yield Violation(CODE, f"gradient clipping {reason}", clip.call, fix)
