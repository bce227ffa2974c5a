"""The values that flow between the rules, the engine and the reporters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Mapping, Optional

if TYPE_CHECKING:  # reporters and cache hits must not pay for importing LibCST
    import libcst as cst

    from accumlint.fixer import Replacement

Applicability = Literal["safe", "unsafe"]


@dataclass(frozen=True)
class Fix:
    """A rewrite of the original tree: each key is a node of the parsed module, by identity."""

    message: str
    applicability: Applicability
    changes: Mapping[cst.CSTNode, Replacement]


@dataclass(frozen=True)
class Violation:
    """What a rule emits: the node to report on, the reason, and maybe a fix."""

    code: str
    message: str
    node: cst.CSTNode
    fix: Optional[Fix] = None


@dataclass(frozen=True)
class Location:
    row: int  # 1-based
    column: int  # 1-based, like ruff


@dataclass(frozen=True)
class Edit:
    """One text replacement, as ruff's JSON writes it."""

    content: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class FixSummary:
    message: str
    applicability: Applicability
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    """A located violation in one file, ready to report."""

    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Optional[FixSummary] = None
    url: Optional[str] = None


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked, with a one-line cause."""

    filename: str
    message: str


@dataclass
class FileResult:
    filename: str
    findings: list[Finding] = field(default_factory=list)
    error: Optional[FileError] = None
    # Set by fix mode: the new text (None when nothing changed) and how many fixes went in.
    fixed_source: Optional[str] = None
    fixes_applied: int = 0
