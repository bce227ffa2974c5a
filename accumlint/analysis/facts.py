"""ModuleFacts: the one analysis every rule reads."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, TypeVar

from accumlint.analysis.ancestry import forget_ancestry
from accumlint.analysis import accumulators, calls
from accumlint.analysis.calls import AnalysedModule
from accumlint.analysis import passes
from accumlint.analysis.called_windows import CalledWindow, called_windows
from accumlint.analysis.collect import CallSite, Collected, Loop, Scope, collect
from accumlint.analysis.dataflow import DataFlow
from accumlint.analysis.events import BACKWARD, Event
from accumlint.analysis.exprs import dotted, forget_names, last_part
from accumlint.analysis.reach import Reached, reached
from accumlint.analysis.roles import Roles
from accumlint.analysis.windows import Window, begin_analysis, end_analysis
from accumlint.project import ProjectIndex
from accumlint.source import SourceText

T = TypeVar("T")


@dataclass
class ScopeFacts:
    scope: Scope
    events: list[Event]
    windows: list[Window]
    _pass_loops: Optional[list[tuple[Loop, Event]]] = field(default=None, repr=False)
    _called_windows: Optional[list[CalledWindow]] = field(default=None, repr=False)
    resolver: Optional[calls.Resolver] = field(default=None, repr=False)

    def pass_loops(self) -> list[tuple[Loop, Event]]:
        """The loops of passes of this scope with the step after each (see passes.py), worked out
        once for the rules that read them."""
        if self._pass_loops is None:
            self._pass_loops = passes.pass_loops(self.scope, self.events, self.windows)
        return self._pass_loops

    def called_windows(self) -> list[CalledWindow]:
        """The loops of this scope whose micro-batches run in a function they call before the
        step (see called_windows.py), worked out once."""
        if self._called_windows is None:
            resolver = self.resolver
            self._called_windows = called_windows(self.scope, self.events, self.windows, resolver) if resolver else []
        return self._called_windows

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
                if event.kind != BACKWARD or event.callee is None:
                    continue
                every = window.every_micro_step(event.stmt)
                # the called step function runs the backward itself, before its own gate
                through_step = not every and window.backward_in_call(event)
                if not (every or through_step):
                    continue
                for found in reached(event, BACKWARD):
                    if through_step and not (len(found.calls) == 1 and found.on_every_call()):
                        continue
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
    _memo: dict[str, object] = field(default_factory=dict, repr=False)

    def calls_named(self, name: str) -> list[tuple[ScopeFacts, CallSite]]:
        """The call sites in the module whose callee's last name is `name` (indexed once)."""
        index = self.cached("calls_by_name", self._index_calls)
        return index.get(name, [])

    def _index_calls(self) -> dict[str, list[tuple[ScopeFacts, CallSite]]]:
        index: dict[str, list[tuple[ScopeFacts, CallSite]]] = {}
        for sf in self.scopes:
            for site in sf.scope.calls:
                index.setdefault(last_part(dotted(site.call.func)), []).append((sf, site))
        return index

    def cached(self, key: str, compute: Callable[[], T]) -> T:
        """A whole-module fact that rules ask about more than once, computed on first use."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]



def forget_module_caches() -> None:
    """Drop what the analysis of one module memoised for itself (names, ancestry, aliases, call
    indexes, accumulators); the project modules it read stay analysed."""
    forget_names()
    forget_ancestry()
    end_analysis()
    accumulators.forget_accumulators()


def analyse(
    module: ast.Module,
    source: SourceText,
    path: Optional[Path] = None,
    index: Optional[ProjectIndex] = None,
    imports: Optional[Mapping[str, str]] = None,
) -> ModuleFacts:
    """The facts of one checked module; with a path and a project index, calls into the
    project's other modules are followed too."""
    forget_module_caches()
    # A module another checked file called into was read and analysed already: its tree is this
    # one when the engine found the same text (see ProjectIndex.parsed).
    known = calls.analysed_as_read(index, path, module) if index is not None and path is not None and imports is None else None
    analysed = known if known is not None else AnalysedModule(collect(module, imports), path, index, source)
    collected = analysed.collected
    begin_analysis(collected)
    facts = ModuleFacts(module, source, collected, analysed.roles, analysed.flow, analysed)
    for scope in collected.scopes:
        scope_events, windows = analysed.windows_of(scope)
        facts.scopes.append(ScopeFacts(scope, scope_events, windows, resolver=analysed.resolver))
    return facts
