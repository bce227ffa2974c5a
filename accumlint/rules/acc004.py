"""ACC004 clip-before-unscale: clipping gradients that the GradScaler still multiplies."""

from __future__ import annotations

import ast
from typing import Callable, Iterator, Optional

from accumlint.analysis import ModuleFacts, settings
from accumlint.analysis.calls import Callee
from accumlint.analysis.facts import ScopeFacts
from accumlint.analysis.reach import reached, scaler_stepped_in
from accumlint.analysis.windows import Window
from accumlint.analysis.collect import Stmt
from accumlint.analysis.events import BACKWARD, CLIP, STEP, UNSCALE, Event
from accumlint.model import Fix, Violation
from accumlint.rules.common import disabled_scaler, place_in
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
    # `if amp: scaler.scale(loss).backward(); scaler.unscale_(opt) else: loss.backward()`: the
    # region starts at the first of the last backward passes that exclude one another.
    start = min(event.order for event in _last_exclusive(backwards))
    return lambda stmt: stmt.order >= start


def _unscaled_clip_in(callee: Callee) -> Optional[Event]:
    """The first clip of a called step function that precedes its GradScaler step with no
    `unscale_` before it in that function (and no backward of its own: then it is judged alone)."""
    events = sorted(callee.module.direct.get(id(callee.scope), []), key=lambda e: e.order)
    if any(e.kind == BACKWARD for e in events):
        return None
    for clip in events:
        if clip.kind != CLIP or clip.call is None or clip.self_unscaling or clip.stmt.loops:
            continue
        if any(e.kind == UNSCALE and e.order < clip.order for e in events):
            return None
        if any(e.kind == STEP and e.scaler and e.order > clip.order and e.stmt.compatible(clip.stmt) for e in events):
            return clip
    return None


def _scaler_behind(backward: Event) -> Optional[str]:
    """The GradScaler whose scaled loss this backward runs: its own, or for a call
    (`self._run_batch(batch)`), the one every backward inside the called function goes through,
    when nothing in there unscales."""
    if backward.callee is None:
        return backward.scaler
    scalers = {found.event.scaler for found in reached(backward, BACKWARD)}
    if len(scalers) != 1 or None in scalers or next(reached(backward, UNSCALE), None) is not None:
        return None
    return scalers.pop()


def _scaled_backward_before(
    clip: Event, events: list[Event], region: Callable[[Stmt], bool], scaler: Optional[str]
) -> bool:
    """A backward through `scaler` runs before the clip, on its branch: the gradients it clips
    are scaled ones, whatever the called step function does with them later."""
    return scaler is not None and any(
        e.kind == BACKWARD and e.order < clip.order and region(e.stmt) and e.stmt.compatible(clip.stmt)
        and _scaler_behind(e) == scaler
        for e in events
    )


def _scaled_only_in_another_mode(clip: Event, events: list[Event], region: Callable[[Stmt], bool]) -> bool:
    """Every scaled backward before the clip runs in another mode than the clip (`if args.fp16:
    optim.backward(loss)` / `else: scaler.scale(loss).backward()`, then `if args.fp16:
    optim.clip_grad_norm(...)`): the gradients it clips were never multiplied by the scaler."""
    scaled = [e for e in events if e.kind == BACKWARD and e.order < clip.order and region(e.stmt) and _scaler_behind(e)]
    return bool(scaled) and all(
        not e.stmt.compatible(clip.stmt) or settings.apart(clip.stmt, e.stmt) for e in scaled
    )


def _last_exclusive(events: list[Event]) -> list[Event]:
    """The last event and those just before it on branches that exclude it and one another
    (`if scaler: scaler.scale(loss).backward() else: loss.backward()`): what reaches the next
    statement, one per branch."""
    if not events:
        return []
    last = [events[-1]]
    for event in reversed(events[:-1]):
        if any(event.stmt.compatible(other.stmt) for other in last):
            break
        last.append(event)
    return last


def _unscaled_each_micro_step(window: Window, clip: Event, unscales: list[Event], events: list[Event]) -> bool:
    """`scaler.unscale_(opt); clip(...)` after every backward of an accumulation window: a GradScaler
    allows one `unscale_` per optimizer between updates, so the second micro-step raises."""
    if not window.accumulates(events) or not window.every_micro_step(clip.stmt):
        return False
    return any(window.every_micro_step(u.stmt) for u in unscales)


def _clip_calls(sf: ScopeFacts, facts: ModuleFacts) -> Iterator[tuple[Stmt, ast.Call, Callee]]:
    """Calls of project functions that clip: in a loop, the calls the loop's events hold; in a
    function without a loop (whose events hold only its own), its resolved calls."""
    if sf.scope.loops:
        for event in sf.events:
            if event.kind == CLIP and event.callee is not None and event.call is not None and event.stmt.loops:
                yield event.stmt, event.call, event.callee
        return
    if not any(e.kind == BACKWARD and e.scaler for e in sf.events):
        return  # no scaled backward of its own: nothing it calls can clip scaled gradients of this call
    resolver = facts.analysed.resolver
    for site in sf.scope.calls:
        callee = resolver.resolve(site.call, sf.scope)
        if callee is not None and callee.scope is not sf.scope and CLIP in resolver.kinds(callee):
            yield site.stmt, site.call, callee


def _bare_clip_in(callee: Callee) -> Optional[Event]:
    """The clip of a called function that only clips (`self._clip_gradients(max_norm)`): no
    backward, step or `unscale_` of its own, so the caller decides what it clips."""
    events = callee.module.direct.get(id(callee.scope), [])
    if any(e.kind in {BACKWARD, STEP, UNSCALE} for e in events):
        return None
    clips = [e for e in events if e.kind == CLIP and e.call is not None and not e.self_unscaling and not e.stmt.loops]
    return min(clips, key=lambda e: e.order) if clips else None


def _scaler_step_after(stmt: Stmt, scaler: Optional[str], events: list[Event], region: Callable[[Stmt], bool]) -> bool:
    """The caller steps `scaler` after this statement, on its branch."""
    return any(
        e.kind == STEP and e.scaler == scaler and e.order > stmt.order and region(e.stmt)
        and e.stmt.compatible(stmt) and not settings.apart(stmt, e.stmt)
        for e in events
    )


def _through_calls(sf: ScopeFacts, facts: ModuleFacts, reported: set[int]) -> Iterator[Violation]:
    """`scaler.scale(loss).backward()`, then `self._optimizer_step()` that clips and steps the
    scaler, or `self._clip_gradients()` that only clips before this function steps the scaler:
    the clip is reported where it is written (in this module), report only, since another caller
    of that function might unscale first."""
    for stmt, call, callee in _clip_calls(sf, facts):
        region: Callable[[Stmt], bool] = stmt.loops[0].contains if stmt.loops else (lambda _: True)
        before = [
            e for e in sf.events
            if e.order < stmt.order and region(e.stmt) and e.stmt.compatible(stmt) and e.kind in {BACKWARD, UNSCALE}
        ]
        last = _last_exclusive(before)
        scaled = [e for e in last if e.kind == BACKWARD and _scaler_behind(e) is not None]
        if not scaled or any(e.kind == UNSCALE for e in last):
            continue  # no scaled backward right before the call, or an unscale_ in between
        scaler = _scaler_behind(scaled[0])
        if disabled_scaler(scaler, sf.scope):
            continue
        clip = _unscaled_clip_in(callee)
        if clip is None:
            clip = _bare_clip_in(callee)
            if clip is not None and not _scaler_step_after(stmt, scaler, sf.events, region):
                continue  # only clips, and no step of this scaler follows here
        if clip is None or clip.call is None or id(clip.call) in reported:
            continue
        reported.add(id(clip.call))
        backward = scaled[0]
        scaled_text = f"`{scaler}.scale(...).backward()`"
        if backward.callee is not None:
            scaled_text += f" in `{backward.callee.scope.name}()`"
        if callee.module is facts.analysed:
            line = getattr(stmt.node, "lineno", "?")
            yield Violation(
                CODE,
                f"gradient clipping runs on scaled gradients: `{callee.scope.name}()` is called at line {line} after "
                f"{scaled_text} and clips before any `unscale_()`",
                clip.call,
            )
        else:  # the clip is in another module: reported at the call, naming where it is
            where = place_in(callee.module, clip.call)
            yield Violation(
                CODE,
                f"gradient clipping runs on scaled gradients: `{callee.scope.name}()` ({where}) clips before any "
                f"`unscale_()`, and it is called here after {scaled_text}",
                call,
            )


def check(facts: ModuleFacts) -> Iterator[Violation]:
    reported: set[int] = set()
    for sf in facts.scopes:
        yield from _through_calls(sf, facts, reported)
        for clip in sf.events:
            if clip.kind != CLIP or clip.call is None or clip.self_unscaling or clip.helper:
                continue
            region = _region(clip, sf.events)
            if region is None:
                continue
            # The GradScaler step this clip precedes, on the same branch (AMP and non-AMP paths differ).
            scaler_steps = [
                e for e in sf.events
                if e.kind == STEP and e.order > clip.order and region(e.stmt)
                and e.stmt.compatible(clip.stmt) and not settings.apart(clip.stmt, e.stmt)
                and (e.scaler or _scaled_backward_before(clip, sf.events, region, scaler_stepped_in(e)))
            ]
            if not scaler_steps or _scaled_only_in_another_mode(clip, sf.events, region):
                continue
            step = scaler_steps[0]
            scaler = step.scaler or scaler_stepped_in(step)
            if disabled_scaler(scaler, sf.scope):
                continue
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
            if good and (clip_in_block or window is None or not _unscaled_each_micro_step(window, clip, good, sf.events)):
                continue
            if good:
                reason = (
                    f"and `{scaler}.unscale_()` run on every micro-step while the step runs once per window: "
                    f"the second `unscale_()` before `{scaler}.step()` raises, and each clip rescales a partial sum; "
                    f"unscale and clip in the step block, before the step"
                )
            elif not clip_in_block:
                reason = "runs every micro-step, on partial gradients the GradScaler still multiplies"
            elif unscales and all(u.order > clip.order for u in unscales):
                reason = f"comes before `{scaler}.unscale_()`: it clips scaled gradients"
            else:
                reason = f"runs on scaled gradients: `{scaler}.unscale_()` is not called before it"
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
                insertion = insert_before(facts.source, clip.stmt.node, [f"{scaler}.unscale_({step.optimizer})"])
                edits = [insertion]
                for u in unscales:
                    edits.append(None if u.stmt.node is clip.stmt.node else remove(facts.source, u.stmt.node, u.stmt.block))
                if all(e is not None for e in edits):
                    fix = Fix(
                        f"Call `{scaler}.unscale_({step.optimizer})` right before clipping",
                        "safe",
                        tuple(e for e in edits if e is not None),
                    )
            if id(clip.call) not in reported:
                yield Violation(CODE, f"gradient clipping {reason}", clip.call, fix)
