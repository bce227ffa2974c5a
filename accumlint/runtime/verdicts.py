"""Pure decisions over measured numbers, kept apart from torch so they are easy to test.

A window is the set of backward passes one optimizer step applies. For each backward the probe
measured, per loss node, the weight the loss entered backward with times its count (its "mass").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

REL_TOL = 0.02
UNDIVIDED_BAND = (0.75, 1.25)  # a loss divided by k >= 2 with natural weight <= 1.25 cannot land here


def close(a: float, b: float, tol: float = REL_TOL) -> bool:
    return abs(a - b) <= tol * max(abs(b), 1e-12)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "ok", "undivided" (ACC001), "underdivided" (ACC001), "overdivided" (ACC010)
    weight_sum: float
    k: int
    divisor: Optional[int] = None


def weigh_window(masses: Sequence[Sequence[tuple[float, bool]]],
                 batches: Optional[int]) -> Optional[Verdict]:
    """Judge one window from its per-backward (mass, exact) lists; None when it cannot tell.

    `batches` is how many DataLoader batches were fetched during the window (None without a
    DataLoader): a wrong divisor is only judged when each backward is one micro-batch.
    """
    k = len(masses)
    if k < 2 or any(not per_bw for per_bw in masses):
        return None
    if any(not exact for per_bw in masses for _, exact in per_bw):
        return None
    dominant = [max(m for m, _ in per_bw) for per_bw in masses]
    total = [sum(m for m, _ in per_bw) for per_bw in masses]
    if close(sum(dominant), 1.0) or close(sum(total), 1.0):
        return Verdict("ok", sum(total), k)
    low, high = UNDIVIDED_BAND
    # A backward may carry several loss terms (aux losses, per-token losses summed): the
    # micro-batch's weight is then either its dominant term or the sum of its terms.
    for weights in (dominant, total):
        if all(low <= w <= high for w in weights):
            return Verdict("undivided", sum(weights), k, 1)
    if batches is not None and batches != k:
        return None
    for weights in (dominant, total):
        divisor = _common_divisor(weights)
        if divisor is not None and divisor != k:
            kind = "overdivided" if divisor > k else "underdivided"
            return Verdict(kind, sum(weights), k, divisor)
    return None


def _common_divisor(weights: Sequence[float]) -> Optional[int]:
    """d when every weight is about 1/d for one integer d >= 2."""
    if weights[0] <= 0:
        return None
    divisor = round(1.0 / weights[0])
    if divisor < 2 or not all(close(w, 1.0 / divisor) for w in weights):
        return None
    return divisor


def modal_size(sizes: Sequence[int]) -> Optional[int]:
    """The most common window size; ties go to the larger (a partial window is the smaller)."""
    counts = Counter(s for s in sizes if s > 0)
    if not counts:
        return None
    best = max(counts.values())
    return max(s for s, c in counts.items() if c == best)


def strictly_growing(values: Sequence[int], run: int = 3) -> bool:
    """The last `run` values strictly increase."""
    if len(values) < run:
        return False
    tail = list(values)[-run:]
    return all(a < b for a, b in zip(tail, tail[1:]))
