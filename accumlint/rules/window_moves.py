"""Moving a per-micro-step statement into the window's step block (ACC007, ACC008)."""

from __future__ import annotations

import ast
from typing import Optional

from accumlint.analysis.collect import Stmt
from accumlint.analysis.events import SCHED, STEP, UPDATE, Event, EventKind
from accumlint.analysis.windows import Window
from accumlint.model import TextEdit
from accumlint.rules.edits import move_after, remove
from accumlint.source import SourceText


def _inside(stmt: Stmt, outer: ast.AST) -> Optional[list[tuple[ast.AST, str]]]:
    """The compound statements between `outer` (a loop or a gate) and the statement."""
    path = list(stmt.path)
    for index, (node, _) in enumerate(path):
        if node is outer:
            return path[index + 1:]
    return None


def _moved_unit(stmt: Stmt, window: Window) -> Optional[tuple[ast.AST, Optional[list]]]:
    """The statement, or the `if` that only guards it (`if scheduler is not None:`), with the
    block that holds it; None when it sits in a branch or block that moving would drop."""
    inside = _inside(stmt, window.micro_loop.node)
    if inside is None:
        inside = list(stmt.path)  # an implicit loop (Lightning's training_step): the function body
    node: ast.AST = stmt.node
    for enclosing, branch in reversed(inside):
        if (
            isinstance(enclosing, ast.If) and branch == "body" and not enclosing.orelse
            and len(enclosing.body) == 1 and enclosing.body[0] is node
        ):
            node = enclosing
            continue
        return None  # an `else` branch, a block with other statements, a `with` or `try`: not moved
    if node is stmt.node:
        return node, stmt.block
    header = stmt.scope.header_of(node)
    return (node, header.block) if header is not None else None


def _directly_in_block(anchor: Stmt, window: Window) -> bool:
    """The anchor is a statement of the step block itself, not of a branch inside it."""
    outer: ast.AST = window.gate if window.form == "gate" and window.gate is not None else window.step_loop.node
    inside = _inside(anchor, outer)
    if inside is None:
        return window.step_loop.implicit and not anchor.path
    return not inside


def move_into_step_block(
    src: SourceText, event: Event, window: Window, events: list[Event], anchors: set[EventKind], already_there: bool
) -> Optional[tuple[TextEdit, ...]]:
    """Remove the statement of `event` (with an `if` that only guards it) and, unless the block
    already does the same, re-insert it after the last statement of the step block whose event
    kind is in `anchors`. No edit when the statement runs beside more than one step block (an
    AMP and a plain branch each with its own): moving it into one would drop it from the other."""
    stmt = event.stmt
    if not stmt.is_statement or window.form == "callee":
        return None  # the step block lies in the function the loop calls: nothing to move it beside
    candidates = [w for w in (window, *window.siblings) if w.step.stmt.compatible(stmt)]
    if len(candidates) != 1:
        return None
    in_block = [e for e in events if e.kind in anchors and window.in_step_block(e.stmt)]
    if not in_block:
        return None
    anchor = max(in_block, key=lambda e: e.order).stmt
    if anchor.node is stmt.node or not anchor.is_statement or not _directly_in_block(anchor, window):
        return None
    unit = _moved_unit(stmt, window)
    if unit is None:
        return None
    node, block = unit
    compound = node is not stmt.node or isinstance(node, (ast.For, ast.AsyncFor))  # a `for` over the accumulators
    if already_there:
        removal = remove(src, node, block, compound)
        return (removal,) if removal is not None else None
    return move_after(src, node, block, anchor.node, compound)


WINDOW_END = {STEP, UPDATE, SCHED}
