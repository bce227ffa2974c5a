"""ACC004 clip-before-unscale: clipping gradients that the GradScaler still multiplies."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from accumlint.analysis import ModuleFacts
from accumlint.analysis.events import CLIP, STEP, UNSCALE
from accumlint.model import Fix, Violation
from accumlint.rules.edits import before, lone_statement, new_line, statement_line

CODE = "ACC004"


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        for clip in sf.events:
            if clip.kind != CLIP or clip.self_unscaling or clip.helper or clip.stmt.loop is None:
                continue
            loop = clip.stmt.loops[0]
            # The GradScaler step this clip precedes, on the same branch (AMP and non-AMP paths differ).
            scaler_steps = [
                e for e in sf.events
                if e.kind == STEP and e.scaler and e.order > clip.order and loop.contains(e.stmt)
                and e.stmt.compatible(clip.stmt)
            ]
            if not scaler_steps:
                continue
            step = scaler_steps[0]
            window = next((w for w in sf.windows if w.step_loop.contains(clip.stmt)), None)
            clip_in_block = window is None or window.in_step_block(clip.stmt)
            unscales = [
                e for e in sf.events
                if e.kind == UNSCALE and loop.contains(e.stmt) and e.stmt.compatible(clip.stmt)
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
            fix = None
            clip_line = statement_line(clip.stmt)
            if clip_in_block and clip_line is not None and step.optimizer:
                changes = {clip_line: before(clip_line, new_line(f"{step.scaler}.unscale_({step.optimizer})"))}
                movable = True
                for u in unscales:
                    line = lone_statement(u.stmt)
                    if line is None or line is clip_line:
                        movable = False
                    else:
                        changes[line] = cst.RemovalSentinel.REMOVE
                if movable:
                    fix = Fix(f"Call `{step.scaler}.unscale_({step.optimizer})` right before clipping", "safe", changes)
            yield Violation(CODE, f"gradient clipping {reason}", clip.call, fix)
