"""Runtime findings: the static checker's `Finding` (code, message, file, location) plus what was
measured, as scalar evidence and a short table; a bug that repeats every step is reported once."""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Iterator, Optional, Sequence

from accumlint.model import Finding, Location
from accumlint.registry import RULES
from accumlint.runtime.messages import render

# Frames from these trees are never "the user's line": torch itself, this checker, the stdlib.
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PREFIXES: tuple[str, ...] = ()


def _skip_prefixes() -> tuple[str, ...]:
    global _SKIP_PREFIXES
    if not _SKIP_PREFIXES:
        prefixes = [os.path.join(_OWN_DIR, "runtime") + os.sep, os.path.join(_OWN_DIR, "run.py")]
        torch_mod = sys.modules.get("torch")
        torch_file = getattr(torch_mod, "__file__", None)
        if torch_file:
            prefixes.append(os.path.dirname(os.path.abspath(torch_file)) + os.sep)
        for key in ("stdlib", "platstdlib"):
            path = sysconfig.get_paths().get(key)
            if path:
                prefixes.append(os.path.abspath(path) + os.sep)
        _SKIP_PREFIXES = tuple(prefixes)
    return _SKIP_PREFIXES


def is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    if os.sep + "site-packages" + os.sep in path and os.sep + "torch" + os.sep in path:
        return False
    return not path.startswith(_skip_prefixes())


def user_frames(start: Optional[FrameType] = None) -> Iterator[FrameType]:
    """Yield the user's frames, innermost first."""
    frame: Optional[FrameType] = start if start is not None else sys._getframe(1)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename):
            yield frame
        frame = frame.f_back


@dataclass
class Site:
    filename: str
    row: int
    column: int = 1

    @classmethod
    def here(cls) -> "Site":
        for frame in user_frames(sys._getframe(1)):
            return cls(frame.f_code.co_filename, frame.f_lineno or 1)
        return cls("<unknown>", 1)

    @classmethod
    def of_frame(cls, frame: FrameType) -> "Site":
        return cls(frame.f_code.co_filename, frame.f_lineno or 1)


@dataclass
class Table:
    """What was measured, row by row (a window, a step, a backward pass)."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows]}


@dataclass
class RuntimeFinding:
    finding: Finding
    kind: str
    evidence: dict[str, Any] = field(default_factory=dict)
    table: Optional[Table] = None
    count: int = 1

    @property
    def code(self) -> str:
        return self.finding.code


class Findings:
    """Findings keyed by (kind, place, key): the first occurrence's numbers are kept, later
    ones only counted, except where the watcher replaces the table with a longer one."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str, int, str], RuntimeFinding] = {}

    def add(self, kind: str, site: Optional[Site], *, say: Optional[dict[str, Any]] = None,
            table: Optional[Table] = None, key: str = "", **evidence: Any) -> RuntimeFinding:
        site = site or Site("<unknown>", 1)
        ident = (kind, site.filename, site.row, key)
        found = self._by_key.get(ident)
        if found is not None:
            found.count += 1
            return found
        code, message = render(kind, **{**evidence, **(say or {})})
        info = RULES.get(code)
        where = Location(site.row, site.column)
        finding = Finding(code, message, site.filename, where, where, None,
                          info.url if info else None)
        found = self._by_key[ident] = RuntimeFinding(finding, kind, evidence, table)
        return found

    def has(self, code: str) -> bool:
        return any(f.code == code for f in self._by_key.values())

    def all(self) -> list[RuntimeFinding]:
        return sorted(self._by_key.values(),
                      key=lambda f: (f.finding.filename, f.finding.location.row, f.code))

    def __len__(self) -> int:
        return len(self._by_key)


def shorten(values: Sequence[Any], keep: int = 8) -> list[Any]:
    """The first values of a long series and its last one: tables stay short."""
    values = list(values)
    if len(values) <= keep:
        return values
    return values[: keep - 1] + [values[-1]]
