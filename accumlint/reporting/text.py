"""ruff's concise text (`path:row:col: CODE [*] message`) and its `full` variant (each finding
with its source line and a caret), then a summary that never claims more than was checked."""

from __future__ import annotations

from typing import Any, TextIO

import click

from accumlint.newer_syntax import running_version
from accumlint.model import Finding
from accumlint.registry import RULES
from accumlint.reporting.report import Report


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _style(report: Report, text: str, **styles: Any) -> str:
    return click.style(text, **styles) if report.color else text


def _headline(report: Report, finding: Finding) -> str:
    mark = "[*] " if report.mode.applicable(finding) else ""
    place = (
        _style(report, finding.display_path, bold=True)
        + _style(report, ":", fg="cyan")
        + f"{finding.location.row}"
        + _style(report, ":", fg="cyan")
        + f"{finding.location.column}"
        + _style(report, ":", fg="cyan")
    )
    code = _style(report, finding.code, fg="red", bold=True)
    return f"{place} {code} {_style(report, mark, fg='cyan') if mark else ''}{finding.message}\n"


def emit(report: Report, out: TextIO) -> None:
    for finding in report.findings:
        out.write(_headline(report, finding))
        if report.show_fixes and finding.fix is not None:
            out.write(f"  fix ({finding.fix.applicability}): {finding.fix.message}\n")
    if report.show_fixes and report.fixed_files:
        _fixed_listing(report, out)
    out.write(summary(report))


def emit_full(report: Report, out: TextIO) -> None:
    """Each finding with the lines it covers (at most three) underlined, then its fix."""
    for finding in report.findings:
        out.write(_headline(report, finding))
        snippet, width = _snippet(report, finding)
        out.write(snippet)
        if finding.fix is not None:
            label = "fix" if report.mode.applicable(finding) else f"{finding.fix.applicability} fix"
            out.write(f"{' ' * (width + 1)}= {label}: {finding.fix.message}\n")
        out.write("\n")
    out.write(summary(report))


def _snippet(report: Report, finding: Finding) -> tuple[str, int]:
    """The lines under the finding, and the width of their line numbers."""
    lines = report.sources.lines(finding.filename, finding.cell)
    start, end = finding.location, finding.end_location
    if not 1 <= start.row <= len(lines):
        return "", 1
    last = min(end.row, len(lines), start.row + 2)
    width = len(str(last))
    gutter = " " * width + " |"
    out = [_style(report, gutter, fg="blue") + "\n"]
    for row in range(start.row, last + 1):
        text = lines[row - 1].expandtabs(1)  # one column per tab keeps the caret under the code
        first = start.column if row == start.row else len(text) - len(text.lstrip()) + 1
        stop = end.column if row == end.row else len(text) + 1
        carets = "^" * max(1, stop - first)
        out.append(_style(report, f"{row:>{width}} |", fg="blue") + f" {text}\n")
        marker = " " * (first - 1) + _style(report, carets, fg="red", bold=True)
        if row == last:
            marker += " " + _style(report, finding.code, fg="red", bold=True)
        out.append(_style(report, gutter, fg="blue") + f" {marker}\n")
    return "".join(out), width


def _fixed_listing(report: Report, out: TextIO) -> None:
    out.write("\nFixed:\n")
    for filename in sorted(report.fixed_files):
        out.write(f"- {filename}:\n")
        for code, count in sorted(report.fixed_files[filename].items()):
            out.write(f"    {count} × {code} ({RULES[code].name if code in RULES else code})\n")


def summary(report: Report) -> str:
    remaining = len(report.findings)
    newer = len({error.filename for error in report.errors if error.needs_newer_python})
    failed = len({error.filename for error in report.errors if not error.needs_newer_python})
    lines = []
    if report.mode.fix and report.fixes_applied:
        total = remaining + report.fixes_applied
        lines.append(f"Found {_plural(total, 'error')} ({report.fixes_applied} fixed, {remaining} remaining).")
    elif remaining:
        lines.append(f"Found {_plural(remaining, 'error')}.")
    elif not failed and not newer:
        lines.append("All checks passed!")
    if failed:
        # Never "All checks passed!" when a file was not checked at all.
        lines.append(f"{_plural(failed, 'file')} could not be checked (each error names its cause).")
    if newer:
        # Valid code for a newer Python: not the file's fault, and not checked either.
        lines.append(
            f"{_plural(newer, 'file')} {'needs' if newer == 1 else 'need'} a newer Python to parse: run accumlint "
            f"on that Python to check {'it' if newer == 1 else 'them'} (it runs on {running_version()})."
        )
    fixable, hidden = report.fixable(), report.hidden()
    hint = ""
    if hidden:
        was = "fix" if hidden == 1 else "fixes"
        hint = f"{hidden} hidden {was} can be enabled with the `--unsafe-fixes` option"
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option" + (f" ({hint})." if hint else "."))
    elif hint:
        lines.append(f"No fixes available ({hint}).")
    return "\n".join(lines) + "\n"
