"""ACC001 unscaled-accumulated-loss: the loss reaches backward undivided by the window size."""

from __future__ import annotations

import ast
from typing import Iterator

from accumlint.analysis import ModuleFacts
from accumlint.model import Fix, Violation
from accumlint.rules.common import framework_divides, rescales_grads
from accumlint.rules.edits import MUL, divided, replace, replace_receiver
from accumlint.rules.meta import FixSafety

CODE = "ACC001"
NAME = "unscaled-accumulated-loss"
SUMMARY = "loss handed to backward is never divided by the accumulation steps"
FIX: FixSafety = "safe"


def check(facts: ModuleFacts) -> Iterator[Violation]:
    src = facts.source
    for sf in facts.scopes:
        if not sf.windows or rescales_grads(sf.scope):
            continue
        for window, event in sf.micro_step_backwards():
            if event.call is None or event.tensor is None or framework_divides(event, facts):
                continue
            scaling = facts.flow.scaling(event.tensor, event.stmt, window.k_names)
            if scaling.unknown or scaling.divided:
                continue
            k_text = src.segment(window.k)
            new_tensor = divided(src, event.tensor, window.k)
            if isinstance(event.call.func, ast.Attribute) and event.tensor is event.call.func.value:
                edit = replace_receiver(src, event.tensor, new_tensor, MUL)
            else:
                edit = replace(src, event.tensor, new_tensor)
            yield Violation(
                CODE,
                f"loss reaches backward without division by the accumulation steps `{k_text}`: "
                f"each update is `{k_text}` times too large",
                event.call,
                Fix(f"Divide the loss by `{k_text}` at the backward call", "safe", (edit,)),
            )
