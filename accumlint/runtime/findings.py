"""Runtime findings: what was measured, where in the user's code, merged across repetitions."""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any, Optional

# Frames from these trees are never "the user's line": torch itself, this checker, the stdlib.
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKIP_PREFIXES: tuple[str, ...] = ()


def _skip_prefixes() -> tuple[str, ...]:
    global _SKIP_PREFIXES
    if not _SKIP_PREFIXES:
        prefixes = [os.path.join(_OWN_DIR, "runtime") + os.sep, os.path.join(_OWN_DIR, "run.py")]
        torch_mod = sys.modules.get("torch")
        if torch_mod is not None and getattr(torch_mod, "__file__", None):
            prefixes.append(os.path.dirname(os.path.abspath(torch_mod.__file__)) + os.sep)
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


def user_frames(start=None):
    """Yield the user's frames, innermost first."""
    frame = start if start is not None else sys._getframe(1)
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


@dataclass
class RuntimeFinding:
    code: str
    message: str
    site: Site
    evidence: dict[str, Any] = field(default_factory=dict)
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "filename": self.site.filename,
            "location": {"row": self.site.row, "column": self.site.column},
            "end_location": {"row": self.site.row, "column": self.site.column},
            "fix": None,
            "url": None,
            "evidence": dict(self.evidence, occurrences=self.count),
        }


class Findings:
    """Findings keyed by (code, place, kind): a bug that repeats every step is reported once."""

    def __init__(self) -> None:
        self._by_key: dict[tuple, RuntimeFinding] = {}

    def add(self, code: str, message: str, site: Optional[Site] = None,
            kind: str = "", **evidence: Any) -> RuntimeFinding:
        site = site or Site("<unknown>", 1)
        key = (code, site.filename, site.row, kind)
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = RuntimeFinding(code, message, site, evidence)
        else:
            found.count += 1
        return found

    def has(self, code: str) -> bool:
        return any(f.code == code for f in self._by_key.values())

    def all(self) -> list[RuntimeFinding]:
        return sorted(self._by_key.values(),
                      key=lambda f: (f.site.filename, f.site.row, f.code))

    def __len__(self) -> int:
        return len(self._by_key)
