"""The rule catalog's index: stable codes, names and one-line summaries.

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


RULES: dict[str, RuleInfo] = {
    info.code: info
    for info in (
        RuleInfo("ACC001", "unscaled-accumulated-loss",
                 "loss handed to backward is never divided by the accumulation steps", "safe"),
        RuleInfo("ACC002", "loss-kept-with-graph",
                 "a running total or list keeps every step's autograd graph alive", "safe"),
        RuleInfo("ACC003", "recurrent-state-not-detached",
                 "state carried into the next iteration is not detached after backward", "sometimes"),
        RuleInfo("ACC004", "clip-before-unscale",
                 "gradients are clipped while still multiplied by the GradScaler's scale", "safe"),
        RuleInfo("ACC005", "partial-window-dropped",
                 "the last micro-batches of each epoch never reach optimizer.step()", "sometimes"),
        RuleInfo("ACC006", "retain-graph-in-loop",
                 "backward(retain_graph=True) in a loop keeps graphs nobody uses", "unsafe"),
        RuleInfo("ACC007", "zero-grad-inside-window",
                 "gradients are zeroed every micro-step while the step is gated", "safe"),
        RuleInfo("ACC008", "per-micro-step-schedule",
                 "scheduler.step() or scaler.update() runs every micro-step", "unsafe"),
        RuleInfo("ACC009", "ddp-sync-every-micro-step",
                 "DistributedDataParallel all-reduces on every micro-step", None),
        RuleInfo("ACC010", "double-scaled-loss",
                 "the loss is divided by the accumulation steps twice", "unsafe"),
    )
}


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
