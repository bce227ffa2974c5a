"""Writing runtime findings: the static checker's text line with the evidence, the measured
table under it, and the static JSON objects plus `evidence` (scalars and the table)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, TextIO

from accumlint.model import Finding
from accumlint.runtime.findings import RuntimeFinding, Table


@dataclass
class RunSummary:
    """What the run itself did, so a report never says "0 findings" about a run that was not
    checked."""

    steps: int
    windows: int
    backward_passes: int
    exit_status: int
    error: Optional[str] = None  # the script's exception, one line
    stopped_at: Optional[int] = None  # --max-steps reached
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    def line(self, findings: int) -> str:
        noun = "finding" if findings == 1 else "findings"
        seen = (f"{self.steps} optimizer step{'s' if self.steps != 1 else ''}, "
                f"{self.windows} window{'s' if self.windows != 1 else ''}, "
                f"{self.backward_passes} backward pass{'es' if self.backward_passes != 1 else ''}"
                f" observed")
        if self.error is not None:
            return (f"accumlint run: the run could not be checked to its end: the script raised "
                    f"{self.error} (exit status {self.exit_status}) after {seen}; "
                    f"{findings} {noun} up to there")
        if self.exit_status != 0:
            return (f"accumlint run: the script exited with status {self.exit_status} after "
                    f"{seen}; {findings} {noun} up to there")
        if self.steps == 0:
            return (f"accumlint run: no optimizer step was observed ({self.backward_passes} "
                    f"backward passes): nothing was checked; {findings} {noun}")
        stopped = ", stopped by --max-steps" if self.stopped_at is not None else ""
        return f"accumlint run: {findings} {noun} ({seen}{stopped})"

    def to_json(self) -> dict[str, Any]:
        return {"optimizer_steps": self.steps, "windows": self.windows,
                "backward_passes": self.backward_passes, "exit_status": self.exit_status,
                "error": self.error, "stopped_at_step": self.stopped_at}


def _display_path(filename: str) -> str:
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if rel.startswith("..") else rel


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        shown = ", ".join(_format_value(v) for v in list(value)[:8])
        return f"[{shown}{', ...' if len(value) > 8 else ''}]"
    return str(value)


def format_table(table: Table, indent: str = "    ") -> list[str]:
    cells = [list(table.columns)] + [[_format_value(v) for v in row] for row in table.rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    lines = [indent + " | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
             for row in cells]
    lines.insert(1, indent + "-+-".join("-" * w for w in widths))
    return lines


def format_text(found: RuntimeFinding) -> str:
    finding = found.finding
    evidence = ", ".join(f"{k}={_format_value(v)}" for k, v in found.evidence.items())
    line = (f"{_display_path(finding.filename)}:{finding.location.row}:{finding.location.column}:"
            f" {finding.code} {finding.message}")
    line = f"{line} [{evidence}]" if evidence else line
    if found.table is not None and found.table.rows:
        line = "\n".join([line, *format_table(found.table)])
    return line


def write_text(findings: Iterable[RuntimeFinding], out: TextIO,
               summary: Optional[RunSummary] = None) -> None:
    findings = list(findings)
    for found in findings:
        out.write(format_text(found) + "\n")
    if summary is not None:
        for note in summary.notes:
            out.write(f"accumlint run: note: {note}\n")
        out.write(summary.line(len(findings)) + "\n")
    else:
        noun = "finding" if len(findings) == 1 else "findings"
        out.write(f"accumlint run: {len(findings)} {noun}\n")


def as_dict(found: RuntimeFinding) -> dict[str, Any]:
    """The static checker's JSON object (reporting/json_format.py) plus `evidence`."""
    finding = found.finding
    where = {"row": finding.location.row, "column": finding.location.column}
    evidence: dict[str, Any] = dict(found.evidence, occurrences=found.count)
    if found.table is not None:
        evidence["table"] = found.table.to_json()
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": os.path.abspath(finding.filename),
        "location": where,
        "end_location": {"row": finding.end_location.row, "column": finding.end_location.column},
        "fix": None,
        "url": finding.url,
        "noqa_row": finding.location.row,
        **({"cell": None} if "cell" in Finding.__dataclass_fields__ else {}),
        "evidence": evidence,
    }


def to_json(findings: Iterable[RuntimeFinding]) -> str:
    return json.dumps([as_dict(f) for f in findings], indent=2, default=str)
