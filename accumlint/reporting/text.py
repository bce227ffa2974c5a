"""ruff's concise text: `path:row:col: CODE [*] message`, then a summary of what --fix would do."""

from __future__ import annotations

from typing import TextIO

from accumlint.registry import RULES
from accumlint.reporting.report import Report


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def emit(report: Report, out: TextIO) -> None:
    findings = report.findings
    for finding in findings:
        mark = "[*] " if report.mode.applicable(finding) else ""
        out.write(
            f"{finding.filename}:{finding.location.row}:{finding.location.column}: "
            f"{finding.code} {mark}{finding.message}\n"
        )
        if report.show_fixes and finding.fix is not None:
            out.write(f"  fix ({finding.fix.applicability}): {finding.fix.message}\n")
    if report.show_fixes and report.fixed_files:
        _fixed_listing(report, out)
    out.write(summary(report))


def _fixed_listing(report: Report, out: TextIO) -> None:
    out.write("\nFixed:\n")
    for filename in sorted(report.fixed_files):
        out.write(f"- {filename}:\n")
        for code, count in sorted(report.fixed_files[filename].items()):
            out.write(f"    {count} × {code} ({RULES[code].name if code in RULES else code})\n")


def summary(report: Report) -> str:
    remaining = len(report.findings)
    lines = []
    if report.mode.fix and report.fixes_applied:
        total = remaining + report.fixes_applied
        lines.append(f"Found {_plural(total, 'error')} ({report.fixes_applied} fixed, {remaining} remaining).")
    elif remaining:
        lines.append(f"Found {_plural(remaining, 'error')}.")
    else:
        lines.append("All checks passed!")
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
