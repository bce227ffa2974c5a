"""--statistics: how many findings of each code, like ruff's table (or a JSON list)."""

from __future__ import annotations

import json
from collections import Counter
from typing import TextIO

from accumlint.registry import RULES
from accumlint.reporting.report import Report


def rows(report: Report) -> list[dict[str, object]]:
    counts: Counter[str] = Counter(f.code for f in report.findings)
    fixable = {f.code for f in report.findings if report.mode.applicable(f)}
    return [
        {"code": code, "name": RULES[code].name if code in RULES else "", "count": count, "fixable": code in fixable}
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def emit(report: Report, out: TextIO, fmt: str = "text") -> None:
    table = rows(report)
    if fmt == "json":
        json.dump(table, out, indent=2)
        out.write("\n")
        return
    if not table:
        return
    width = max(len(str(row["count"])) for row in table)
    for row in table:
        mark = "[*]" if row["fixable"] else "   "
        out.write(f"{row['count']:>{width}}\t{row['code']}\t{mark} {row['name']}\n")
