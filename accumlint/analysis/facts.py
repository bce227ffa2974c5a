"""ModuleFacts: the one analysis every rule reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import ast

from accumlint.analysis.collect import Collected, Scope, collect
from accumlint.analysis.dataflow import DataFlow
from accumlint.analysis.events import BACKWARD, Event, collect_events
from accumlint.analysis.ancestry import forget_ancestry
from accumlint.analysis.exprs import forget_names
from accumlint.analysis.roles import Roles, infer_roles
from accumlint.analysis.windows import Window, find_windows
from accumlint.source import SourceText


@dataclass
class ScopeFacts:
    scope: Scope
    events: list[Event]
    windows: list[Window]

    def micro_step_backwards(self) -> Iterator[tuple[Window, Event]]:
        """Each backward of this scope that runs on every micro-step of a window, once, with
        that window (helpers' backward passes excluded: their tensor is not in sight; so is the
        implicit backward of Lightning's automatic optimisation)."""
        seen: set[int] = set()
        for window in self.windows:
            for event in self.events:
                if event.kind != BACKWARD or event.helper or event.call is None or id(event) in seen:
                    continue
                if window.every_micro_step(event.stmt):
                    seen.add(id(event))
                    yield window, event



@dataclass
class ModuleFacts:
    module: ast.Module
    source: SourceText
    collected: Collected
    roles: Roles
    flow: DataFlow
    scopes: list[ScopeFacts] = field(default_factory=list)



def analyse(module: ast.Module, source: SourceText) -> ModuleFacts:
    forget_names()
    forget_ancestry()
    collected = collect(module)
    roles = infer_roles(collected)
    events = collect_events(collected, roles)
    facts = ModuleFacts(module, source, collected, roles, DataFlow(collected))
    for scope in collected.scopes:
        scope_events = events[id(scope)]
        facts.scopes.append(ScopeFacts(scope, scope_events, find_windows(scope, scope_events)))
    return facts
