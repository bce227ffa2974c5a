"""SARIF 2.1.0 output, the format GitHub code scanning uploads."""

from __future__ import annotations

import json
import os
from pathlib import PurePath
from typing import Iterable, Optional

from accumlint import __version__
from accumlint.model import FileError, Finding
from accumlint.registry import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/accumlint/accumlint"


def artifact_uri(filename: str, root: Optional[str] = None) -> str:
    """A relative URI with forward slashes; code scanning matches it against the checkout."""
    path, _cell = _split_cell(filename)
    base = root if root is not None else os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
    except ValueError:  # another drive on Windows: keep what we were given
        rel = path
    if rel.startswith(".."):  # outside the root: an absolute path says more than ../../..
        rel = os.path.abspath(path)
    return PurePath(rel).as_posix()


def _split_cell(filename: str) -> tuple[str, Optional[int]]:
    # Notebook findings are named "nb.ipynb:cell 3" (see accumlint.notebook).
    head, sep, tail = filename.rpartition(":cell ")
    if sep and tail.isdigit():
        return head, int(tail)
    return filename, None


def _rule(code: str) -> dict:
    info = RULES.get(code)
    if info is None:  # a code the registry does not know still gets a valid descriptor
        return {"id": code, "name": code, "shortDescription": {"text": code}}
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "helpUri": info.url,
        "properties": {"fix": info.fix or "none"},
    }


def _result(finding: Finding, rule_index: dict[str, int], root: Optional[str]) -> dict:
    _path, cell = _split_cell(finding.filename)
    region = {
        "startLine": finding.location.row,
        "startColumn": finding.location.column,
        "endLine": finding.end_location.row,
        "endColumn": finding.end_location.column,
    }
    result: dict = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": "error",
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(finding.filename, root)},
                    "region": region,
                }
            }
        ],
    }
    if cell is not None:
        # SARIF has no notion of notebook cells: the region is relative to the cell.
        result["properties"] = {"notebookCell": cell}
    elif finding.fix is not None and finding.fix.edits:
        result["fixes"] = [_fix(finding, root)]
    return result


def _fix(finding: Finding, root: Optional[str]) -> dict:
    assert finding.fix is not None
    replacements = [
        {
            "deletedRegion": {
                "startLine": edit.location.row,
                "startColumn": edit.location.column,
                "endLine": edit.end_location.row,
                "endColumn": edit.end_location.column,
            },
            "insertedContent": {"text": edit.content},
        }
        for edit in finding.fix.edits
    ]
    return {
        "description": {"text": f"{finding.fix.message} ({finding.fix.applicability})"},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": artifact_uri(finding.filename, root)},
                "replacements": replacements,
            }
        ],
    }


def _notification(error: FileError, root: Optional[str]) -> dict:
    return {
        "level": "error",
        "message": {"text": error.message},
        "locations": [
            {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(error.filename, root)}}}
        ],
    }


def sarif_log(
    findings: Iterable[Finding], errors: Iterable[FileError] = (), root: Optional[str] = None
) -> dict:
    findings = list(findings)
    errors = list(errors)
    # Every registered rule is described, so a clean run still documents what was checked.
    codes = sorted(set(RULES) | {finding.code for finding in findings})
    rule_index = {code: i for i, code in enumerate(codes)}
    invocation = {
        "executionSuccessful": not errors,
        "toolExecutionNotifications": [_notification(error, root) for error in errors],
    }
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
                # LibCST columns count code points, not the UTF-16 units SARIF assumes by default.
                "columnKind": "unicodeCodePoints",
                "invocations": [invocation],
                "results": [_result(finding, rule_index, root) for finding in findings],
            }
        ],
    }


def render_sarif(
    findings: Iterable[Finding], errors: Iterable[FileError] = (), root: Optional[str] = None
) -> str:
    return json.dumps(sarif_log(findings, errors, root), indent=2, ensure_ascii=False) + "\n"
