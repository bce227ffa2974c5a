"""GitHub Actions workflow commands: one annotation per finding or unreadable file."""

from __future__ import annotations

from typing import Iterable

from accumlint.model import FileError, Finding


def _data(text: str) -> str:
    # The runner's escaping rules: message data and property values differ.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    start, end = finding.location, finding.end_location
    # "nb.ipynb:cell 3" (accumlint.notebook): a cell-relative line would point into the wrong
    # part of the .ipynb JSON, so annotate the notebook as a whole and name the cell in the text.
    head, sep, cell = finding.filename.rpartition(":cell ")
    if sep and cell.isdigit():
        props = [f"file={_prop(head)}", f"title={_prop(finding.code)}"]
        message = f"cell {cell}, line {start.row}, col {start.column}: {finding.message}"
        return f"::error {','.join(props)}::{_data(message)}"
    props = [
        f"file={_prop(finding.filename)}",
        f"line={start.row}",
        f"col={start.column}",
        f"endLine={end.row}",
        f"endColumn={end.column}",
        f"title={_prop(finding.code)}",
    ]
    return f"::error {','.join(props)}::{_data(finding.message)}"


def error_annotation(error: FileError) -> str:
    return f"::error file={_prop(error.filename)},title=accumlint::{_data(error.message)}"


def render_github(findings: Iterable[Finding], errors: Iterable[FileError] = ()) -> str:
    lines = [annotation(finding) for finding in findings]
    lines += [error_annotation(error) for error in errors]
    return "".join(line + "\n" for line in lines)
