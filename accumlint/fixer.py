"""Apply rule fixes as text edits: pick the ones that do not touch each other, apply them, and
describe them for JSON and SARIF."""

from __future__ import annotations

from typing import Iterable, Sequence

from accumlint.model import Edit, Fix, Location, TextEdit
from accumlint.source import SourceText


def _clashes(edit: TextEdit, taken: Sequence[TextEdit]) -> bool:
    for other in taken:
        if edit.start == edit.end and other.start == other.end:
            if edit.start == other.start:
                return True  # two insertions at one place: their order would be a guess
        elif edit.start < other.end and other.start < edit.end:
            return True
        elif edit.start == edit.end and other.start < edit.start < other.end:
            return True
        elif other.start == other.end and edit.start < other.start < edit.end:
            return True
    return False


def compatible_fixes(fixes: Iterable[Fix]) -> list[Fix]:
    """Fixes whose edits neither overlap nor nest in each other's; the rest wait for the next round."""
    chosen: list[Fix] = []
    taken: list[TextEdit] = []
    for fix in fixes:
        if any(_clashes(edit, taken) for edit in fix.edits):
            continue
        if any(_clashes(edit, [other for other in fix.edits if other is not edit]) for edit in fix.edits):
            continue
        chosen.append(fix)
        taken.extend(fix.edits)
    return chosen


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits, last first so earlier offsets stay valid."""
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


def located_edits(src: SourceText, fix: Fix) -> tuple[Edit, ...]:
    """The fix's edits with 1-based line and column positions, as ruff's JSON writes them."""
    return tuple(
        Edit(
            content=edit.text,
            location=Location(*src.position(edit.start)),
            end_location=Location(*src.position(edit.end)),
        )
        for edit in sorted(fix.edits, key=lambda e: (e.start, e.end))
    )
