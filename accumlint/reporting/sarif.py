"""SARIF 2.1.0 output, the format GitHub code scanning uploads.

Artifact URIs are percent-encoded and relative to the repository root, named in
`originalUriBaseIds` as %SRCROOT% (code scanning matches them against the checkout wherever the
command ran). Rules carry their catalog page: the "What it does" section as `fullDescription`,
the whole page as `help`. A notebook finding points at its place in the `.ipynb` JSON text and
names its cell, and cell-relative row and column, in `properties`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePath
from typing import Any, Iterable, Optional
from urllib.parse import quote

from accumlint import __version__
from accumlint.model import FileError, Finding, Location
from accumlint.registry import RULES
from accumlint.reporting.sources import Sources

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/accumlint/accumlint"
ROOT_ID = "%SRCROOT%"

JSONObject = dict[str, Any]


def repository_root(start: Optional[str] = None) -> str:
    """The nearest folder holding `.git` above `start` (the working directory), else `start`."""
    here = Path(start or os.getcwd()).resolve()
    for folder in [here, *here.parents]:
        if (folder / ".git").exists():
            return str(folder)
    return str(here)


def _encode(path: str) -> str:
    # RFC 3986: keep the unreserved characters and the path separator, encode the rest (spaces,
    # `#`, `%`, non-ASCII as UTF-8), so the value is a valid uri-reference.
    return quote(path, safe="/-._~")


def artifact_location(filename: str, root: Optional[str] = None) -> JSONObject:
    """`{"uri": ..., "uriBaseId": "%SRCROOT%"}` for a file under the root; a `file:` URI else."""
    base = os.path.abspath(root if root is not None else repository_root())
    path = os.path.abspath(filename)
    try:
        rel = os.path.relpath(path, base)
    except ValueError:  # another drive on Windows
        rel = None
    if rel is None or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return {"uri": Path(path).as_uri()}
    return {"uri": _encode(PurePath(rel).as_posix()), "uriBaseId": ROOT_ID}


def artifact_uri(filename: str, root: Optional[str] = None) -> str:
    return str(artifact_location(filename, root)["uri"])


def _section(page: str, title: str) -> Optional[str]:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", page, re.S | re.M)
    return " ".join(match.group(1).split()) if match else None


def _rule(code: str) -> JSONObject:
    from accumlint import catalog

    info = RULES.get(code)
    if info is None:  # a code the registry does not know still gets a valid descriptor
        return {"id": code, "name": code, "shortDescription": {"text": code}}
    rule: JSONObject = {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "helpUri": info.url,
        "properties": {"fix": info.fix or "none"},
    }
    page = catalog.page(code)
    if page:
        rule["fullDescription"] = {"text": _section(page, "What it does") or info.summary}
        rule["help"] = {"text": page, "markdown": page}
    return rule


def _region(start: Location, end: Location) -> JSONObject:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _result(finding: Finding, rule_index: dict[str, int], root: str, sources: Sources) -> JSONObject:
    start, end = finding.location, finding.end_location
    physical: JSONObject = {"artifactLocation": artifact_location(finding.filename, root)}
    if finding.cell is None:
        physical["region"] = _region(start, end)
    else:
        mapped_start = sources.in_file(finding.filename, finding.cell, start)
        mapped_end = sources.in_file(finding.filename, finding.cell, end)
        if mapped_start is not None and mapped_end is not None:
            physical["region"] = _region(mapped_start, mapped_end)
    result: JSONObject = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": "error",
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": physical}],
    }
    if finding.cell is not None:
        # SARIF has no notion of cells: the cell and the position inside it go in properties.
        # No `fixes`: their edits are relative to the cell, not to the JSON text.
        result["properties"] = {"notebookCell": finding.cell, "cellRegion": _region(start, end)}
    elif finding.fix is not None and finding.fix.edits:
        result["fixes"] = [_fix(finding, root)]
    return result


def _fix(finding: Finding, root: str) -> JSONObject:
    assert finding.fix is not None
    replacements = [
        {"deletedRegion": _region(edit.location, edit.end_location), "insertedContent": {"text": edit.content}}
        for edit in finding.fix.edits
    ]
    return {
        "description": {"text": f"{finding.fix.message} ({finding.fix.applicability})"},
        "artifactChanges": [
            {"artifactLocation": artifact_location(finding.filename, root), "replacements": replacements}
        ],
    }


def _notification(error: FileError, root: str) -> JSONObject:
    note: JSONObject = {
        "level": "error",
        "message": {"text": error.message},
        "locations": [{"physicalLocation": {"artifactLocation": artifact_location(error.filename, root)}}],
    }
    if error.cell is not None:
        note["properties"] = {"notebookCell": error.cell}
    return note


def sarif_log(
    findings: Iterable[Finding], errors: Iterable[FileError] = (), root: Optional[str] = None,
    sources: Optional[Sources] = None,
) -> JSONObject:
    findings = list(findings)
    errors = list(errors)
    base = os.path.abspath(root if root is not None else repository_root())
    sources = sources or Sources()
    # Every registered rule is described, so a clean run still documents what was checked.
    codes = sorted(set(RULES) | {finding.code for finding in findings})
    rule_index = {code: i for i, code in enumerate(codes)}
    invocation = {
        "executionSuccessful": not errors,
        "toolExecutionNotifications": [_notification(error, base) for error in errors],
    }
    base_uri = Path(base).as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "accumlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "originalUriBaseIds": {ROOT_ID: {"uri": base_uri}},
                # Our columns count code points, not the UTF-16 units SARIF assumes by default.
                "columnKind": "unicodeCodePoints",
                "invocations": [invocation],
                "results": [_result(finding, rule_index, base, sources) for finding in findings],
            }
        ],
    }


def render_sarif(
    findings: Iterable[Finding], errors: Iterable[FileError] = (), root: Optional[str] = None,
    sources: Optional[Sources] = None,
) -> str:
    return json.dumps(sarif_log(findings, errors, root, sources), indent=2, ensure_ascii=False) + "\n"
