"""Apply rule fixes to a parsed module, and describe them as text edits."""

from __future__ import annotations

import difflib
from typing import Iterable, Mapping, Sequence, Union

import libcst as cst

from accumlint.model import Edit, Fix, Location

# What a fix puts in place of one original node: a new node, several statements, or nothing.
Replacement = Union[cst.CSTNode, cst.FlattenSentinel, cst.RemovalSentinel]


class _Replacer(cst.CSTTransformer):
    def __init__(self, changes: Mapping[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self._changes = changes

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        return self._changes.get(original_node, updated_node)


def apply_changes(module: cst.Module, changes: Mapping[cst.CSTNode, Replacement]) -> cst.Module:
    if not changes:
        return module
    return module.visit(_Replacer(changes))


def _subtree(node: cst.CSTNode) -> set[int]:
    ids: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        ids.add(id(current))
        stack.extend(current.children)
    return ids


def compatible_fixes(fixes: Sequence[Fix]) -> list[Fix]:
    """Pick fixes whose edited regions do not nest or overlap; the rest wait for the next round."""
    chosen: list[Fix] = []
    taken: set[int] = set()
    for fix in fixes:
        region: set[int] = set()
        for node in fix.changes:
            region |= _subtree(node)
        keys = {id(node) for node in fix.changes}
        # A key inside a taken region, or a taken key inside this region, is a conflict.
        if region & taken or keys & taken:
            continue
        chosen.append(fix)
        taken |= region
    return chosen


def merge(fixes: Iterable[Fix]) -> dict[cst.CSTNode, Replacement]:
    merged: dict[cst.CSTNode, Replacement] = {}
    for fix in fixes:
        merged.update(fix.changes)
    return merged


def text_edits(before: str, after: str) -> tuple[Edit, ...]:
    """Whole-line edits that turn `before` into `after`, located like ruff's (1-based)."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    edits = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            Edit(
                content="".join(new[j1:j2]),
                location=Location(row=i1 + 1, column=1),
                end_location=Location(row=i2 + 1, column=1),
            )
        )
    return tuple(edits)
