"""GradScaler and clipping (ACC004, ACC008 for scaler.update): the order of scale, unscale_,
clip, step and update within a window, tracked through the public methods only."""

from __future__ import annotations

import math
import weakref
from typing import Any, Optional

import torch

from accumlint.frameworks.torch_core import MEASURING_CLIP_LIMIT
from accumlint.runtime.findings import Site, Table
from accumlint.runtime.records import BackwardInfo, OptRec, ScalerRec
from accumlint.runtime.watcher import Watcher

UNSCALE_TWICE = "unscale_() has already been called"
NO_INF_CHECKS = "No inf checks were recorded"


def _clips(limit: Any) -> bool:
    """A limit that can clip: finite and below the measuring limit (an infinite one only measures)."""
    try:
        value = float(limit)
    except (TypeError, ValueError):
        return limit is None  # unknown: the call's own default
    return math.isfinite(value) and value < MEASURING_CLIP_LIMIT


class AmpWatcher(Watcher):
    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.scalers: dict[int, ScalerRec] = {}
        self._scaled_roots: dict[int, tuple[Any, ScalerRec]] = {}

    def scaler_rec(self, scaler: Any) -> ScalerRec:
        srec = self.scalers.get(id(scaler))
        if srec is None or srec.ref() is not scaler:
            srec = self.scalers[id(scaler)] = ScalerRec(scaler)
        return srec

    # ----- events from the GradScaler wrappers ------------------------------------------
    def scaled(self, scaler: Any, outputs: Any) -> None:
        if not scaler.is_enabled():
            return
        srec = self.scaler_rec(scaler)
        srec.scaled_since_update = True
        items = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        for out in items:
            if isinstance(out, torch.Tensor):
                self._scaled_roots[id(out)] = (weakref.ref(out), srec)
        if len(self._scaled_roots) > 64:  # forget the oldest entries; only the latest matter
            for key in list(self._scaled_roots)[:-16]:
                del self._scaled_roots[key]

    def unscaled(self, scaler: Any, opt: Any) -> None:
        rec = self.monitor.rec_for(opt)
        if rec is None or not scaler.is_enabled():
            return
        srec = self.scaler_rec(scaler)
        srec.unscaled.add(id(rec))
        srec.awaiting_step.add(id(rec))

    def unscale_failed(self, error: RuntimeError) -> Optional[str]:
        if UNSCALE_TWICE not in str(error):
            return None
        found = self.findings.add("unscale-twice", Site.here())
        return f"\n\naccumlint: ACC004 {found.finding.message}."

    def updated(self, scaler: Any) -> None:
        srec = self.scaler_rec(scaler)
        srec.scaled_since_update = False
        srec.unscaled.clear()
        step = self.monitor.total_steps
        if step in srec.updates_per_step or len(srec.updates_per_step) < 8:
            srec.updates_per_step[step] = srec.updates_per_step.get(step, 0) + 1
        if srec.updates_at_step == step and scaler.is_enabled():
            srec.extra_windows.add(step)
            srec.extra_site = srec.extra_site or Site.here()
        srec.updates_at_step = step

    def update_failed(self, error: BaseException) -> Optional[str]:
        if NO_INF_CHECKS not in str(error):
            return None
        found = self.findings.add("update-before-step", Site.here())
        return f"\n\naccumlint: ACC008 {found.finding.message}."

    def clipping(self, params: list[Any], how: str, limit: Any = None) -> None:
        for rec in self.monitor.recs_for_params(params):
            if not rec.pending:
                continue
            if not rec.scaled_by and _clips(limit) and rec.clipped_partial is None:
                rec.clipped_partial = (Site.here(), how)  # reported if another backward joins this window
            for key in rec.scaled_by:
                srec = next((s for s in self.scalers.values() if id(s) == key), None)
                if srec is None or id(rec) in srec.unscaled:
                    continue
                scaler = srec.ref()
                if scaler is None or not scaler.is_enabled():
                    continue
                self.findings.add("clip-scaled", Site.here(), say={"how": how},
                                  optimizer=rec.name, scale=float(scaler.get_scale()))

    # ----- window events ----------------------------------------------------------------
    def backward_started(self, info: BackwardInfo) -> None:
        for root in info.roots:
            entry = self._scaled_roots.get(id(root))
            if entry is not None and entry[0]() is root:
                info.scaler = entry[1]

    def backward_finished(self, info: BackwardInfo, recs: list[OptRec]) -> None:
        for rec in recs:
            if rec.clipped_partial is not None and not rec.scaled_by:
                site, how = rec.clipped_partial
                self.findings.add("clip-partial", site, say={"how": how}, optimizer=rec.name)
                rec.clipped_partial = None
            if info.scaler is not None:
                rec.scaled_by.add(id(info.scaler))
            for scaler in self.scalers.values():
                if id(rec) in scaler.awaiting_step:
                    self.findings.add("after-unscale", info.site, optimizer=rec.name)

    def window_closing(self, rec: OptRec, infos: list[BackwardInfo], window: Any) -> None:
        for scaler in self.scalers.values():
            scaler.awaiting_step.discard(id(rec))

    def finish(self, completed: bool) -> None:
        for srec in self.scalers.values():
            if len(srec.extra_windows) >= 2:
                table = Table(("optimizer steps done", "scaler.update() calls"),
                              sorted(srec.updates_per_step.items())[:6])
                self.findings.add("scaler-update", srec.extra_site, table=table,
                                  windows_with_extra_updates=len(srec.extra_windows))
