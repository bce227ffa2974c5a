"""Moving a per-micro-step statement into the window's step block (ACC007, ACC008)."""

from __future__ import annotations

from typing import Optional

from accumlint.analysis.events import SCHED, STEP, UPDATE, Event, EventKind
from accumlint.analysis.windows import Window
from accumlint.model import TextEdit
from accumlint.rules.edits import move_after, remove
from accumlint.source import SourceText


def move_into_step_block(
    src: SourceText, event: Event, window: Window, events: list[Event], anchors: set[EventKind], already_there: bool
) -> Optional[tuple[TextEdit, ...]]:
    """Remove the statement of `event` and, unless the block already does the same, re-insert it
    after the last statement of the step block whose event kind is in `anchors`."""
    stmt = event.stmt
    in_block = [e for e in events if e.kind in anchors and window.in_step_block(e.stmt)]
    if not in_block or not stmt.is_statement:
        return None
    anchor = max(in_block, key=lambda e: e.order).stmt
    if anchor.node is stmt.node or not anchor.is_statement:
        return None
    if already_there:
        removal = remove(src, stmt.node, stmt.block)
        return (removal,) if removal is not None else None
    return move_after(src, stmt.node, stmt.block, anchor.node)


WINDOW_END = {STEP, UPDATE, SCHED}
