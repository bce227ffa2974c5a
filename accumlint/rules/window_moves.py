"""Moving a per-micro-step statement into the window's step block (ACC007, ACC008)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from accumlint.analysis.events import Event, SCHED, STEP, UPDATE
from accumlint.analysis.windows import Window
from accumlint.fixer import Replacement
from accumlint.rules.edits import after, lone_statement, moved, statement_line


def move_into_step_block(
    event: Event, window: Window, events: list[Event], anchors: set[str], already_there: bool
) -> Optional[dict[cst.CSTNode, Replacement]]:
    """Remove the statement of `event` and, unless the block already does the same, re-insert it
    after the last statement of the step block whose event kind is in `anchors`."""
    line = lone_statement(event.stmt)
    if line is None:
        return None
    in_block = [e for e in events if e.kind in anchors and window.in_step_block(e.stmt)]
    if not in_block:
        return None
    anchor = statement_line(max(in_block, key=lambda e: e.order).stmt)
    if anchor is None or anchor is line:
        return None
    changes: dict[cst.CSTNode, Replacement] = {line: cst.RemovalSentinel.REMOVE}
    if not already_there:
        changes[anchor] = after(anchor, moved(line))
    return changes


WINDOW_END = {STEP, UPDATE, SCHED}
