"""Reporters: each turns a Report into text on a stream. FORMATS maps --format names to them;
a new format (sarif, github) is one module and one entry here."""

from __future__ import annotations

from typing import Callable, TextIO

from accumlint.reporting import json_format, text
from accumlint.reporting.github import render_github
from accumlint.reporting.report import Report
from accumlint.reporting.sarif import render_sarif
from accumlint.reporting.sources import Sources

Reporter = Callable[[Report, TextIO], None]


def _sarif(report: Report, out: TextIO) -> None:
    out.write(render_sarif(report.findings, report.errors, report.root, report.sources))


def _github(report: Report, out: TextIO) -> None:
    out.write(render_github(report.findings, report.errors, report.sources))


FORMATS: dict[str, Reporter] = {
    "text": text.emit,
    "full": text.emit_full,
    "json": json_format.emit,
    "sarif": _sarif,
    "github": _github,
}

__all__ = ["FORMATS", "Report", "Reporter", "Sources"]
