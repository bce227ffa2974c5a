"""ACC015 clip-inside-window: gradients clipped every micro-step while the step is gated."""

from __future__ import annotations

import ast
from typing import Iterator

from accumlint.analysis import ModuleFacts, settings
from accumlint.frameworks import torch_core
from accumlint.analysis.events import CLIP, STEP, UNSCALE, Event
from accumlint.analysis.reach import scaler_stepped_in
from accumlint.analysis.exprs import dotted, keyword, positional
from accumlint.analysis.windows import Window
from accumlint.model import Violation
from accumlint.rules.common import bail_out, under_accumulate
from accumlint.rules.meta import FixSafety

CODE = "ACC015"
NAME = "clip-inside-window"
SUMMARY = "gradients are clipped every micro-step while the step runs once per window"
FIX: FixSafety = None

_INFINITE = {"inf", "math.inf", "torch.inf", "np.inf", "numpy.inf"}
_MAX_ARGUMENTS = ("max_norm", "clip_value", "gradient_clip_val")


def _measures_only(call: ast.Call) -> bool:
    """`clip_grad_norm_(params, float("inf"))`: the norm is read for a log, nothing is clipped."""
    limit = positional(call, 1)
    for name in _MAX_ARGUMENTS:
        limit = limit or keyword(call, name)
    if limit is None:
        return False
    if isinstance(limit, ast.Call) and dotted(limit.func) == "float" and limit.args:
        text = limit.args[0]
        return isinstance(text, ast.Constant) and str(text.value).lower().lstrip("+") in {"inf", "infinity"}
    if isinstance(limit, ast.Constant) and isinstance(limit.value, (int, float)):
        return limit.value >= torch_core.MEASURING_CLIP_LIMIT
    return dotted(limit) in _INFINITE


def _clip_calls(event: Event) -> list[ast.Call]:
    """The clip calls behind an event: its own, or those of the helper it runs."""
    if event.helper is None:
        return [event.call] if event.call is not None else []
    if event.callee is None:
        return []
    inner = event.callee.module.direct.get(id(event.callee.scope), [])
    return [e.call for e in inner if e.kind == CLIP and e.call is not None]


def _scaled(window: Window, clip: Event, events: list[Event]) -> bool:
    """A clip on a GradScaler path (the scaler steps or unscales on a branch that can run with it) is
    ACC004's to judge; a clip on the plain branch of `if amp: ... else: ...` is this rule's."""
    on_path = [window.step, *(e for e in events if window.micro_loop.contains(e.stmt))]
    return any(
        (e.kind == UNSCALE or (e.kind == STEP and (e.scaler or scaler_stepped_in(e))))
        and e.stmt.compatible(clip.stmt) and not settings.apart(clip.stmt, e.stmt)
        for e in on_path
    )


def _clips_each_micro_step(facts: ModuleFacts, window: Window, events: list[Event]) -> list[Event]:
    if not window.accumulates(events):
        return []
    return [
        e for e in events
        if e.kind == CLIP and window.every_micro_step(e.stmt)
        and not under_accumulate(e.stmt, facts) and not bail_out(e.stmt)
        and not any(_measures_only(call) for call in _clip_calls(e))
        and not _scaled(window, e, events)
    ]


def check(facts: ModuleFacts) -> Iterator[Violation]:
    seen: set[int] = set()
    for sf in facts.scopes:
        for window in sf.windows:
            reported: list[Event] = []
            for event in _clips_each_micro_step(facts, window, sf.events):
                if id(event.stmt) in seen or any(not event.stmt.compatible(r.stmt) for r in reported):
                    continue  # one finding for one clip written per branch (`if amp: ... else: ...`)
                seen.add(id(event.stmt))
                reported.append(event)
                what = f"`{event.helper}()` clips gradients" if event.helper else "gradients are clipped"
                yield Violation(
                    CODE,
                    f"{what} on every micro-step while the step runs once per window: each clip rescales the "
                    f"partial sum accumulated so far, so the update is not the window's gradient clipped once; "
                    f"clip in the step block, before the step",
                    event.stmt.node,
                )
