"""`accumlint run --verify`: the equivalence check of the first windows.

For each backward of a verified window it records the loss's weight (d root / d loss), the
loss's reduction and term count (tokens or samples), and the gradient it added. From those it
rebuilds the gradient the whole window should give, every term of every micro-batch weighted
1/N (N the window's terms), and compares it with what was accumulated. It does not run the
model again, so BatchNorm and dropout do not disturb the comparison; what it measures is the
weighting of the run's own micro-batch gradients, which is exactly what the accumulation code
controls."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from accumlint.runtime import graph, torch_private as tp
from accumlint.runtime.findings import Table, shorten
from accumlint.runtime.records import BackwardInfo, OptRec, Window
from accumlint.runtime.watcher import Watcher

TOLERANCE = 0.01  # relative error below which a window is equivalent


@dataclass
class _Pass:
    """One backward of a verified window."""

    reduction: str
    units: int
    weight: list[Any] = field(default_factory=list)  # filled by the pre-hook: d root / d loss
    before: dict[int, Optional[torch.Tensor]] = field(default_factory=dict)
    added: dict[int, torch.Tensor] = field(default_factory=dict)


@dataclass
class Comparison:
    step: int
    units: list[int]
    per_unit: list[float]  # each term's weight times N: 1 when right
    error: float
    ratio: float
    kind: str  # "ok", "undivided", "overdivided", "normalisation", "unexplained"
    site: Any = None


def classify(per_unit: list[float], units: list[int], reductions: list[str], error: float) -> str:
    """Which rule explains a window's error, from the weight each term got (times N)."""
    if error <= TOLERANCE:
        return "ok"
    mean = sum(per_unit) / len(per_unit)
    if all(abs(x - mean) <= 0.02 * abs(mean) for x in per_unit):
        return "undivided" if mean > 1 else "overdivided"
    # each micro-batch loss a mean over its own count, all with the same outer weight
    loss_weights = [x * n for x, n in zip(per_unit, units)]
    lw_mean = sum(loss_weights) / len(loss_weights)
    if (all(r == "mean" for r in reductions) and len(set(units)) > 1
            and all(abs(x - lw_mean) <= 0.02 * abs(lw_mean) for x in loss_weights)):
        return "normalisation"
    return "unexplained"


class _WeightProbe:
    __slots__ = ("into",)

    def __init__(self, into: list[Any]) -> None:
        self.into = into

    def __call__(self, grad_outputs: Any) -> None:
        if not self.into and grad_outputs[0] is not None:
            self.into.append(grad_outputs[0].detach().reshape(()).double().clone())


class Verifier(Watcher):
    def __init__(self, monitor: Any, windows: int) -> None:
        super().__init__(monitor)
        self.wanted = windows
        self.comparisons: list[Comparison] = []
        self.notes: list[str] = []
        self._passes: dict[int, _Pass] = {}
        self._skipped: dict[str, int] = {}
        self._size: Optional[int] = None
        self._batch_norm = False

    @property
    def active(self) -> bool:
        return len(self.comparisons) < self.wanted

    def _skip(self, why: str) -> None:
        self._skipped[why] = self._skipped.get(why, 0) + 1

    def _params(self) -> list[torch.Tensor]:
        params: dict[int, torch.Tensor] = {}
        for rec in self.monitor.opts:
            opt = rec.ref()
            if opt is None:
                continue
            for group in opt.param_groups:
                for p in group["params"]:
                    params[id(p)] = p
        return list(params.values())

    def backward_started(self, info: BackwardInfo) -> None:
        if not self.active or len(info.roots) != 1:
            return
        root = info.roots[0]
        node = getattr(root, "grad_fn", None)
        if node is None or root.numel() != 1:
            return
        nodes = graph.loss_nodes(node)
        units = tp.loss_units(nodes[0]) if len(nodes) == 1 else None
        if units is None:
            self._skip("a backward whose loss is not one mean or sum with a known count")
            return
        if not self._batch_norm:
            self._batch_norm = any(tp.is_batch_norm(n) for n in graph.walk_nodes(node, 2000))
        record = _Pass(units[0], units[1])
        info.handles.append(nodes[0].register_prehook(_WeightProbe(record.weight)))
        record.before = {id(p): (None if p.grad is None else p.grad.detach().clone())
                         for p in self._params()}
        self._passes[info.id] = record

    def backward_finished(self, info: BackwardInfo, recs: list[OptRec]) -> None:
        record = self._passes.get(info.id)
        if record is None:
            return
        for p in self._params():
            if p.grad is None:
                continue
            old = record.before.get(id(p))
            record.added[id(p)] = p.grad.detach().double() - (0 if old is None else old.double())
        record.before = {}

    def window_closing(self, rec: OptRec, infos: list[BackwardInfo], window: Window) -> None:
        passes = [self._passes.pop(i.id, None) for i in infos]
        if not self.active or not infos:
            return
        if window.skipped or rec.zeroed_pending or any(i.retain for i in infos):
            return self._skip("a window with a skipped step, zeroing or retain_graph")
        if len(infos) < 2:
            return self._skip("a window of one backward (no accumulation)")
        if any(p is None or not p.weight for p in passes):
            return self._skip("a window with a backward whose loss weight was not measured")
        if self._size is None:
            self._size = len(infos)
        if len(infos) != self._size:
            return self._skip("an uneven window (another size than the first verified one)")
        scale = 1.0
        if infos[0].scaler is not None:
            scaler = infos[0].scaler.ref()
            scale = float(scaler.get_scale()) if scaler is not None else 1.0
        compared = self._compare(window.step + 1, [p for p in passes if p], scale)
        compared.site = window.site
        self.comparisons.append(compared)

    @staticmethod
    def _compare(step: int, passes: list[_Pass], scale: float) -> Comparison:
        total_units = sum(p.units for p in passes)
        accumulated: dict[int, torch.Tensor] = {}
        reference: dict[int, torch.Tensor] = {}
        per_unit = []
        for p in passes:
            weight = float(p.weight[0]) / scale
            # the gradient of the micro-batch's summed terms, whatever weight it got
            unit_factor = (p.units if p.reduction == "mean" else 1) / (weight * scale)
            per_unit.append(weight / (p.units if p.reduction == "mean" else 1) * total_units)
            for key, added in p.added.items():
                accumulated[key] = accumulated.get(key, 0) + added / scale
                reference[key] = reference.get(key, 0) + added * (unit_factor / total_units)
        diff = sum(float((accumulated[k] - reference[k]).pow(2).sum()) for k in reference)
        ref = sum(float(r.pow(2).sum()) for r in reference.values())
        acc = sum(float(a.pow(2).sum()) for a in accumulated.values())
        ref_norm = math.sqrt(ref) or 1e-30
        error, ratio = math.sqrt(diff) / ref_norm, math.sqrt(acc) / ref_norm
        units = [p.units for p in passes]
        kind = classify(per_unit, units, [p.reduction for p in passes], error)
        return Comparison(step, units, per_unit, error, ratio, kind)

    def finish(self, completed: bool) -> None:
        compared = self.comparisons
        for why, count in self._skipped.items():
            self.notes.append(f"--verify skipped {why} ({count}x)")
        if not compared:
            self.notes.append("--verify compared no window: nothing was verified")
            return
        if self._batch_norm:
            self.notes.append("--verify: the model has BatchNorm, which normalises each "
                              "micro-batch on its own; the check compares the weighting of this "
                              "run's micro-batch gradients, not a run with one batch k times "
                              "larger")
        kinds = [c.kind for c in compared]
        self.notes.append("--verify: " + ", ".join(
            f"step {c.step}: relative error {c.error:.2g} ({c.kind})" for c in compared))
        worst = max(set(kinds), key=kinds.count)
        if worst in ("ok", "unexplained") or kinds.count(worst) < min(2, len(kinds)):
            return
        chosen = [c for c in compared if c.kind == worst]
        code_kind = {"undivided": "verify-undivided", "overdivided": "verify-overdivided",
                     "normalisation": "verify-normalisation"}[worst]
        code = {"undivided": "ACC001", "overdivided": "ACC010", "normalisation": "ACC013"}[worst]
        if code != "ACC013" and self.findings.has(code):
            return  # the probe already reported it, with its own table
        first = chosen[0]
        site = first.site
        table = Table(("optimizer step", "terms per micro-batch", "weight of a term x N",
                       "relative error"),
                      [(c.step, c.units, [round(x, 3) for x in c.per_unit], round(c.error, 4))
                       for c in shorten(chosen, 5)])
        self.findings.add(code_kind, site, table=table,
                          say={"ratio": first.ratio, "error": first.error, "k": len(first.units),
                               "unit": "terms",
                               "counts": ", ".join(map(str, first.units))},
                          relative_error=[round(c.error, 4) for c in chosen],
                          windows_verified=len(compared))
