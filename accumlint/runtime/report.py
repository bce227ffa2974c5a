"""Writing runtime findings: the static checker's text line, or its JSON objects plus evidence."""

from __future__ import annotations

import json
import os
from typing import Iterable, TextIO

from accumlint.runtime.findings import RuntimeFinding


def _display_path(filename: str) -> str:
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if rel.startswith("..") else rel


def _format_value(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        shown = ", ".join(_format_value(v) for v in list(value)[:8])
        return f"[{shown}{', ...' if len(value) > 8 else ''}]"
    return str(value)


def format_text(finding: RuntimeFinding) -> str:
    evidence = ", ".join(f"{k}={_format_value(v)}" for k, v in finding.evidence.items())
    site = finding.site
    line = f"{_display_path(site.filename)}:{site.row}:{site.column}: {finding.code} {finding.message}"
    return f"{line} [{evidence}]" if evidence else line


def write_text(findings: Iterable[RuntimeFinding], out: TextIO) -> None:
    findings = list(findings)
    for finding in findings:
        out.write(format_text(finding) + "\n")
    noun = "finding" if len(findings) == 1 else "findings"
    out.write(f"accumlint run: {len(findings)} {noun}\n")


def to_json(findings: Iterable[RuntimeFinding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2, default=str)
