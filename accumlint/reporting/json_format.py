"""ruff's JSON: a list of findings with cell, code, message, filename, location, end_location,
fix, url and noqa_row. A file that could not be checked is an entry too, with `code: null`
(as ruff writes a syntax error), so a JSON consumer never mistakes it for a clean file."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Optional, TextIO

from accumlint.model import FileError, Finding, FixSummary, Location
from accumlint.reporting.report import Report

# Syntax errors name their place ("syntax error at 3:5: ..."); other causes have none.
_AT = re.compile(r"\bat (\d+):(\d+)\b")


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
        "cell": finding.cell,
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


def error_dict(error: FileError) -> dict[str, Any]:
    match = _AT.search(error.message)
    place = Location(int(match.group(1)), int(match.group(2))) if match else Location(1, 1)
    return {
        "cell": error.cell,
        "code": None,
        "message": error.message,
        "filename": os.path.abspath(error.filename),
        "location": _location(place),
        "end_location": _location(place),
        "fix": None,
        "url": None,
        "noqa_row": None,
    }


def emit(report: Report, out: TextIO) -> None:
    errors = sorted(report.errors, key=lambda e: (e.filename, e.cell or 0))
    entries = [as_dict(f) for f in report.findings] + [error_dict(e) for e in errors]
    json.dump(entries, out, indent=2, ensure_ascii=False)
    out.write("\n")
