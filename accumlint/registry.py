"""The rule catalog's index: stable codes, names and one-line summaries, as each rule module
declares them (and the runtime-only rules listed here).

Codes are never renumbered or reused; a new rule takes the next free number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DOCS_URL = "https://github.com/accumlint/accumlint/blob/main/rules/{code}.md"


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    fix: Optional[str]  # "safe", "unsafe", "sometimes" or None (report only)

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)


def _static_rules() -> list[RuleInfo]:
    from accumlint.rules import RULE_MODULES

    return [RuleInfo(m.CODE, m.NAME, m.SUMMARY, m.FIX) for m in RULE_MODULES]


# Rules that only `accumlint run` reports (the static checker has no check for them).
RUNTIME_ONLY: tuple[RuleInfo, ...] = (
    RuleInfo("ACC013", "window-normalisation-mismatch",
             "each micro-batch loss is a mean over its own token count (run time only)", None),
)

RULES: dict[str, RuleInfo] = {info.code: info for info in sorted((*_static_rules(), *RUNTIME_ONLY), key=lambda i: i.code)}


def resolve_selection(codes: list[str]) -> set[str]:
    """Expand prefixes (`ACC`, `ACC00`, `ALL`) into the codes they name."""
    chosen: set[str] = set()
    for raw in codes:
        prefix = raw.strip().upper()
        if not prefix:
            continue
        if prefix == "ALL":
            prefix = ""
        matched = {code for code in RULES if code.startswith(prefix)}
        if not matched:
            raise ValueError(f"unknown rule selector {raw!r}")
        chosen |= matched
    return chosen
