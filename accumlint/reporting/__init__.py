"""Reporters: each turns a Report into text on a stream. FORMATS maps --format names to them;
a new format (sarif, github) is one module and one entry here."""

from __future__ import annotations

from typing import Callable, TextIO

from accumlint.reporting import json_format, text
from accumlint.reporting.github import render_github
from accumlint.reporting.report import Report
from accumlint.reporting.sarif import render_sarif

Reporter = Callable[[Report, TextIO], None]

FORMATS: dict[str, Reporter] = {
    "text": text.emit,
    "json": json_format.emit,
    "sarif": lambda report, out: out.write(render_sarif(report.findings, report.errors)),
    "github": lambda report, out: out.write(render_github(report.findings, report.errors)),
}

__all__ = ["FORMATS", "Report", "Reporter"]
