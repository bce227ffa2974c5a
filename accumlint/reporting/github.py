"""GitHub Actions workflow commands: one annotation per finding or unreadable file."""

from __future__ import annotations

from typing import Iterable, Optional

from accumlint.model import FileError, Finding
from accumlint.reporting.sources import Sources


def _data(text: str) -> str:
    # The runner's escaping rules: message data and property values differ.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, sources: Optional[Sources] = None) -> str:
    start, end = finding.location, finding.end_location
    message = finding.message
    if finding.cell is not None:
        # The annotation must point at the .ipynb file's own lines: map the cell position into
        # the JSON text, and name the cell and its line in the message for the reader.
        message = f"cell {finding.cell}, line {start.row}, col {start.column}: {message}"
        sources = sources or Sources()
        mapped_start = sources.in_file(finding.filename, finding.cell, start)
        mapped_end = sources.in_file(finding.filename, finding.cell, end)
        if mapped_start is None or mapped_end is None:
            props = [f"file={_prop(finding.filename)}", f"title={_prop(finding.code)}"]
            return f"::error {','.join(props)}::{_data(message)}"
        start, end = mapped_start, mapped_end
    props = [
        f"file={_prop(finding.filename)}",
        f"line={start.row}",
        f"col={start.column}",
        f"endLine={end.row}",
        f"endColumn={end.column}",
        f"title={_prop(finding.code)}",
    ]
    return f"::error {','.join(props)}::{_data(message)}"


def error_annotation(error: FileError) -> str:
    message = error.message if error.cell is None else f"cell {error.cell}: {error.message}"
    return f"::error file={_prop(error.filename)},title=accumlint::{_data(message)}"


def render_github(findings: Iterable[Finding], errors: Iterable[FileError] = (),
                  sources: Optional[Sources] = None) -> str:
    sources = sources or Sources()
    lines = [annotation(finding, sources) for finding in findings]
    lines += [error_annotation(error) for error in errors]
    return "".join(line + "\n" for line in lines)
