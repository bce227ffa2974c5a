"""ACC001 unscaled-accumulated-loss: the loss reaches backward undivided by the window size."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from accumlint.analysis import ModuleFacts
from accumlint.analysis.collect import Scope
from accumlint.analysis.events import Event
from accumlint.analysis.reach import Reached
from accumlint.analysis.windows import Window
from accumlint.model import Fix, Origin, Violation
from accumlint.rules.common import framework_divides, rescales_grads
from accumlint.rules.edits import MUL, divided, replace, replace_receiver
from accumlint.rules.meta import FixSafety
from accumlint.source import SourceText

CODE = "ACC001"
NAME = "unscaled-accumulated-loss"
SUMMARY = "loss handed to backward is never divided by the accumulation steps"
FIX: FixSafety = "safe"


_MISPLACED = "; `{}` reads as a logging frequency, not accumulation steps: the step block looks misplaced"


def _message(k_text: str, path: str = "") -> str:
    where = f" ({path})" if path else ""
    return (
        f"loss reaches backward without division by the accumulation steps `{k_text}`: "
        f"each update is `{k_text}` times too large{where}"
    )


def _division_fix(src: SourceText, event: Event, window: Window, k_text: str) -> Optional[Fix]:
    assert event.call is not None and event.tensor is not None
    new_tensor = divided(src, event.tensor, window.k)
    if isinstance(event.call.func, ast.Attribute) and event.tensor is event.call.func.value:
        edit = replace_receiver(src, event.tensor, new_tensor, MUL)
    else:
        edit = replace(src, event.tensor, new_tensor)
    return Fix(f"Divide the loss by `{k_text}` at the backward call", "safe", (edit,))


def _k_means_the_same_in(k_text: str, caller: Scope, helper: Scope) -> bool:
    """`self.k` names one object in two methods of a class; a caller's local `k` is not in the
    helper's sight, so no division by it can be written there."""
    return k_text.startswith("self.") and caller.class_node is not None and helper.class_node is not None


def _in_helpers(facts: ModuleFacts, sf) -> Iterator[Violation]:
    for window, found in sf.helper_backwards():
        event, module = found.event, found.module
        if rescales_grads(event.stmt.scope) or framework_divides(event, module.roles):
            continue
        assert event.tensor is not None and event.call is not None
        scaling = module.flow.scaling(event.tensor, event.stmt, window.k_names)
        if scaling.unknown or scaling.divided:
            continue
        k_text = facts.source.segment(window.k)
        message = _message(k_text, found.path())
        if module is facts.analysed:
            fix = None
            if _k_means_the_same_in(k_text, sf.scope, event.stmt.scope) and not window.reporting_gate:
                fix = _division_fix(facts.source, event, window, k_text)
            yield Violation(CODE, message, event.call, fix)
        elif module.path is not None and module.source is not None:
            yield Violation(CODE, message, event.call, origin=Origin(str(module.path), module.source))


def check(facts: ModuleFacts) -> Iterator[Violation]:
    src = facts.source
    for sf in facts.scopes:
        if not sf.windows or rescales_grads(sf.scope):
            continue
        for window, event in sf.micro_step_backwards():
            if event.call is None or event.tensor is None or framework_divides(event, facts.roles):
                continue
            scaling = facts.flow.scaling(event.tensor, event.stmt, window.k_names)
            if scaling.unknown or scaling.divided:
                continue
            k_text = src.segment(window.k)
            if window.reporting_gate:  # a logging frequency gates the step: report, offer no division
                yield Violation(CODE, _message(k_text) + _MISPLACED.format(k_text), event.call, None)
                continue
            yield Violation(CODE, _message(k_text), event.call, _division_fix(src, event, window, k_text))
        yield from _in_helpers(facts, sf)
