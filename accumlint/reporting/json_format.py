"""ruff's JSON: a list of findings with code, message, filename, location, end_location, fix, url."""

from __future__ import annotations

import json
import os
from typing import Any, Optional, TextIO

from accumlint.model import Finding, FixSummary, Location
from accumlint.reporting.report import Report


def _location(location: Location) -> dict[str, int]:
    return {"row": location.row, "column": location.column}


def _fix(fix: Optional[FixSummary]) -> Optional[dict[str, Any]]:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.message,
        "edits": [
            {"content": e.content, "location": _location(e.location), "end_location": _location(e.end_location)}
            for e in fix.edits
        ],
    }


def as_dict(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "message": finding.message,
        # Absolute, like ruff, so editors and CI annotators need not know our working directory.
        "filename": os.path.abspath(finding.filename),
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "fix": _fix(finding.fix),
        "url": finding.url,
        "noqa_row": finding.location.row,
    }


def emit(report: Report, out: TextIO) -> None:
    json.dump([as_dict(f) for f in report.findings], out, indent=2, ensure_ascii=False)
    out.write("\n")
