"""What every reporter reads: the results of one run and the options that shaped them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from accumlint.checking import Mode
from accumlint.model import FileError, FileResult, Finding
from accumlint.reporting.sources import Sources


@dataclass
class Report:
    results: list[FileResult]  # sorted by filename
    errors: list[FileError] = field(default_factory=list)  # files that could not be checked
    mode: Mode = field(default_factory=Mode)
    show_fixes: bool = False
    fixes_applied: int = 0
    fixed_codes: Counter[str] = field(default_factory=Counter)  # per code, with --show-fixes --fix
    fixed_files: dict[str, Counter[str]] = field(default_factory=dict)
    sources: Sources = field(default_factory=Sources)
    color: bool = False  # style the text output (a terminal, and NO_COLOR unset)
    root: Optional[str] = None  # the repository root SARIF URIs are relative to (None: found)

    @property
    def findings(self) -> list[Finding]:
        """Every finding, in a stable order: filename, cell, row, column, code."""
        found = [f for result in self.results for f in result.findings]
        return sorted(found, key=lambda f: (f.filename, f.cell or 0, f.location.row, f.location.column, f.code))

    def fixable(self) -> int:
        return sum(1 for f in self.findings if self.mode.applicable(f))

    def hidden(self) -> int:
        """Unsafe fixes that --unsafe-fixes would enable."""
        if self.mode.unsafe_fixes:
            return 0
        return sum(1 for f in self.findings if f.fix is not None and f.fix.applicability == "unsafe")
