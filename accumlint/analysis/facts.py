"""ModuleFacts: the one analysis every rule reads."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from accumlint.analysis.ancestry import forget_ancestry
from accumlint.analysis.calls import AnalysedModule
from accumlint.analysis.collect import Collected, Scope, collect
from accumlint.analysis.dataflow import DataFlow
from accumlint.analysis.events import BACKWARD, Event, collect_events
from accumlint.analysis.exprs import forget_names
from accumlint.analysis.reach import Reached, reached
from accumlint.analysis.roles import Roles
from accumlint.analysis.windows import Window, find_windows
from accumlint.project import ProjectIndex
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

    def helper_backwards(self) -> Iterator[tuple[Window, Reached]]:
        """The backward passes inside functions this scope calls every micro-step of a window,
        with the calls that lead to them."""
        for window in self.windows:
            for event in self.events:
                if event.kind != BACKWARD or event.callee is None or not window.every_micro_step(event.stmt):
                    continue
                for found in reached(event, BACKWARD):
                    if found.event.call is not None and found.event.tensor is not None:
                        yield window, found



@dataclass
class ModuleFacts:
    module: ast.Module
    source: SourceText
    collected: Collected
    roles: Roles
    flow: DataFlow
    analysed: AnalysedModule
    scopes: list[ScopeFacts] = field(default_factory=list)



def analyse(
    module: ast.Module, source: SourceText, path: Optional[Path] = None, index: Optional[ProjectIndex] = None
) -> ModuleFacts:
    """The facts of one checked module; with a path and a project index, calls into the
    project's other modules are followed too."""
    forget_names()
    forget_ancestry()
    analysed = AnalysedModule(collect(module), path, index, source)
    collected = analysed.collected
    events = collect_events(collected, analysed.direct, analysed.resolver)
    facts = ModuleFacts(module, source, collected, analysed.roles, analysed.flow, analysed)
    for scope in collected.scopes:
        scope_events = events[id(scope)]
        windows = find_windows(scope, scope_events, analysed.resolver.gate_of)
        facts.scopes.append(ScopeFacts(scope, scope_events, windows))
    return facts
