"""ACC009 under DistributedDataParallel: how many backward passes of each window all-reduced
the gradients, counted by a DDP communication hook (one call per bucket)."""

from __future__ import annotations

from typing import Any

from accumlint.runtime import verdicts
from accumlint.runtime.findings import Table, shorten
from accumlint.runtime.records import BackwardInfo, OptRec, Window
from accumlint.runtime.watcher import Watcher


class SyncWatcher(Watcher):
    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.ddp_models = 0  # DDP models whose all-reduces the hook counts

    def all_reduced(self) -> None:
        """Called by the communication hook, once per gradient bucket."""
        info = self.monitor.current
        if info is not None:
            info.synced = True
            info.buckets += 1

    def window_closing(self, rec: OptRec, infos: list[BackwardInfo], window: Window) -> None:
        window.synced = sum(1 for i in infos if i.synced)
        window.buckets = sum(i.buckets for i in infos)

    def finish(self, completed: bool) -> None:
        if not self.ddp_models:
            return
        for rec in self.monitor.opts:
            windows = [w for w in rec.windows if not w.skipped]
            modal = verdicts.modal_size([w.size for w in windows])
            if modal is None or modal < 2:
                continue
            full = [w for w in windows if w.size == modal]
            # every full window synced on more than one backward, and at least two such windows
            if len(full) < 2 or any(w.synced <= 1 for w in full):
                continue
            table = Table(("optimizer step", "backward passes", "all-reduced on",
                           "buckets all-reduced"),
                          [(w.step + 1, w.size, w.synced, w.buckets) for w in shorten(full, 5)])
            synced = min(w.synced for w in full)
            self.findings.add("sync-every-micro-step", full[0].site, table=table,
                              say={"synced": synced, "k": modal}, window=modal,
                              all_reduces_per_window=shorten([w.synced for w in full]),
                              optimizer=rec.name)
