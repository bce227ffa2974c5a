"""The values that flow between the rules, the engine and the reporters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Optional, Union

if TYPE_CHECKING:  # reporters and cache hits need not import the analysis
    import ast

    from accumlint.source import SourceText

Applicability = Literal["safe", "unsafe"]


@dataclass(frozen=True)
class TextEdit:
    """Replace the characters [start, end) of the checked text with `text` (an insertion when
    start == end). Offsets, not lines: the edit touches nothing else."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Origin:
    """Another file of the project, where a finding's faulty statement is."""

    filename: str
    source: SourceText


@dataclass(frozen=True)
class Violation:
    """What a rule emits: the node whose span is reported, the reason, and maybe a fix.
    With an origin, the node is in that other file (and a fix is never offered there)."""

    code: str
    message: str
    node: ast.AST
    fix: Optional[Fix] = None
    origin: Optional[Origin] = None


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
    # A notebook's code cell (1-based, counting every cell as a reader does); rows and columns
    # are then relative to that cell. None for a plain source file.
    cell: Optional[int] = None

    @property
    def display_path(self) -> str:
        """`path` or `path:cell N`, as the text output names the place."""
        return display_path(self.filename, self.cell)


def display_path(filename: str, cell: Optional[int]) -> str:
    return filename if cell is None else f"{filename}:cell {cell}"


# How the cause of a file that only a newer Python can parse begins (see accumlint.newer_syntax).
NEWER_PYTHON = "needs Python"


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked, with a one-line cause."""

    filename: str
    message: str
    cell: Optional[int] = None  # the notebook cell at fault, when one is

    @property
    def needs_newer_python(self) -> bool:
        """Valid code for a newer Python than the one accumlint runs on (counted apart)."""
        return self.message.startswith(NEWER_PYTHON)


@dataclass(frozen=True)
class Notice:
    """Something worth a warning that does not stop the file being checked (a malformed
    `# noqa`, for one). `row` is relative to `cell` in a notebook."""

    filename: str
    row: int
    message: str
    cell: Optional[int] = None

    def render(self) -> str:
        return f"warning: {display_path(self.filename, self.cell)}:{self.row}: {self.message}"


@dataclass
class FileResult:
    filename: str
    findings: list[Finding] = field(default_factory=list)
    error: Optional[FileError] = None
    # Set by fix mode: the new text (None when nothing changed) and how many fixes went in.
    fixed_source: Optional[Union[str, bytes]] = None  # in the type of the text it fixed
    fixes_applied: int = 0
    notices: list[Notice] = field(default_factory=list)
    # The project modules whose text the findings rest on (path -> content hash): a cached
    # result is stale once one of them changes.
    dependencies: dict[str, str] = field(default_factory=dict)
