"""The hub of the runtime checker. The wrappers in patches.py tell it about backward passes,
optimizer steps, zeroing, scaler calls, clipping, scheduler steps and epoch ends; it keeps the
shared records (optimizers, the backward in flight, each optimizer's window) and passes every
event to the watchers, each of which owns one concern and its findings:

- watch_windows: loss weights per window, zeroing, partial windows (ACC001/005/007/010)
- watch_graphs: kept and carried graphs, unused retained graphs (ACC002/003/006)
- watch_amp: GradScaler and clipping (ACC004, ACC008 for update)
- watch_schedule: LR schedulers (ACC008)
- watch_sync: DDP all-reduces per window (ACC009)
- verify: the opt-in equivalence check of the first windows (--verify; ACC001/010/013)

Cheap host-side accounting is always on; the probe and the graph walks run only during the
sampled steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import torch

from accumlint.runtime.findings import Findings, Site
from accumlint.runtime.records import BackwardInfo, OptRec, Window
from accumlint.runtime.watch_amp import AmpWatcher
from accumlint.runtime.watch_graphs import GraphWatcher
from accumlint.runtime.watch_schedule import ScheduleWatcher
from accumlint.runtime.watch_sync import SyncWatcher
from accumlint.runtime.watch_windows import WindowWatcher
from accumlint.runtime.watcher import Watcher


class StopTraining(SystemExit):
    """Raised after --max-steps optimizer steps. A SystemExit with status 0, so `except
    Exception` lets it by, `finally` blocks run, and a process started by a launcher (where no
    runner catches it) ends cleanly."""

    def __init__(self, steps: int) -> None:
        super().__init__(0)
        self.steps = steps


@dataclass
class Options:
    max_steps: Optional[int] = None
    sample_steps: int = 20  # steps with the probe and graph walks on
    scan_every: int = 50  # after the sampled steps, a frame scan every this many steps
    verify_windows: int = 0  # --verify: windows checked against the whole-window gradient


class Monitor:
    def __init__(self, options: Optional[Options] = None) -> None:
        self.options = options or Options()
        self.findings = Findings()
        self.opts: list[OptRec] = []
        self._opt_by_id: dict[int, OptRec] = {}
        self._param_recs: dict[int, list[OptRec]] = {}
        self._hook_handles: list[Any] = []
        self.current: Optional[BackwardInfo] = None
        self._touched: list[OptRec] = []
        self.backward_count = 0
        self.batches = 0
        self.total_steps = 0
        self.windows_closed = 0
        self.stopped = False
        # --verify reads the probe's weights, so the sampled steps cover its windows too
        self._sample_until = max(self.options.sample_steps, self.options.verify_windows + 1
                                 if self.options.verify_windows else 0)
        self.sampling = self._sample_until > 0
        self.sampling_next = self.sampling
        self.windows = WindowWatcher(self)
        self.graphs = GraphWatcher(self)
        self.amp = AmpWatcher(self)
        self.schedule = ScheduleWatcher(self)
        self.sync = SyncWatcher(self)
        self.watchers: list[Watcher] = [self.amp, self.windows, self.graphs, self.schedule,
                                        self.sync]
        if self.options.verify_windows > 0:
            from accumlint.runtime.verify import Verifier

            self.verifier: Optional[Verifier] = Verifier(self, self.options.verify_windows)
            self.watchers.append(self.verifier)
        else:
            self.verifier = None

    # ----- optimizers -------------------------------------------------------------------
    def rec_for(self, opt: Any) -> Optional[OptRec]:
        rec = self._opt_by_id.get(id(opt))
        if rec is not None and rec.ref() is opt:
            return rec
        return None

    def register_params(self, opt: Any, params: list[Any]) -> None:
        rec = self.rec_for(opt)
        if rec is None:
            rec = OptRec(opt, len(self.opts))
            self.opts.append(rec)
            self._opt_by_id[id(opt)] = rec
        for p in params:
            if not isinstance(p, torch.Tensor) or id(p) in rec.param_ids:
                continue
            rec.param_ids.add(id(p))
            self._param_recs.setdefault(id(p), []).append(rec)
            if p.requires_grad and p.is_leaf:
                self._hook_handles.append(p.register_post_accumulate_grad_hook(self._make_hook(rec)))

    def _make_hook(self, rec: OptRec) -> Callable[[Any], None]:
        def on_grad_accumulated(_param: Any) -> None:
            info = self.current
            if info is None or rec.last_seen is info:
                return
            rec.last_seen = info
            self._touched.append(rec)
        return on_grad_accumulated

    def recs_for_params(self, params: Iterable[Any]) -> list[OptRec]:
        found: dict[int, OptRec] = {}
        for p in params:
            for rec in self._param_recs.get(id(p), ()):
                found[id(rec)] = rec
        return list(found.values())

    def remove_hooks(self) -> None:
        for handle in self._hook_handles:
            handle.remove()
        self._hook_handles.clear()

    # ----- backward ---------------------------------------------------------------------
    def before_backward(self, roots: tuple[Any, ...], retain: bool) -> BackwardInfo:
        self.backward_count += 1
        info = BackwardInfo(self.backward_count, Site.here(), retain, roots)
        for watcher in self.watchers:
            watcher.backward_started(info)
        self._touched = []
        self.current = info
        return info

    @staticmethod
    def release(info: BackwardInfo) -> None:
        for handle in info.handles:
            handle.remove()
        info.handles = []

    def backward_failed(self, info: Optional[BackwardInfo], error: RuntimeError) -> Optional[str]:
        self.current = None
        return self.graphs.backward_failed(info, error)

    def after_backward(self, info: BackwardInfo) -> None:
        self.current = None
        touched = self._touched
        self._touched = []
        if not touched:
            live = [r for r in self.opts if r.ref() is not None]
            if len(live) == 1:  # FSDP2 defers param hooks to the sync step: one optimizer owns it
                touched = live
        recs = []
        for rec in touched:
            if rec.in_step:  # LBFGS-style closure: part of the step itself
                continue
            if rec.epoch_boundary and rec.next_epoch_begun:
                rec.mixed_epochs = True
            rec.pending[info.id] = info
            recs.append(rec)
        for watcher in self.watchers:
            watcher.backward_finished(info, recs)

    # ----- optimizer step ---------------------------------------------------------------
    def step_started(self, opt: Any) -> None:
        rec = self.rec_for(opt)
        if rec is None:
            return
        rec.hooked_step = True
        if not rec.in_step:
            rec.in_step = True
            self._close_window(rec, skipped=False)

    def step_finished(self, opt: Any) -> None:
        rec = self.rec_for(opt)
        if rec is None or not rec.in_step:
            return
        rec.in_step = False
        self._after_step(rec)

    def step_skipped(self, rec: OptRec) -> None:
        """GradScaler skipped optimizer.step() on inf/NaN: the window still ends here."""
        self._close_window(rec, skipped=True)
        self._after_step(rec)

    def _close_window(self, rec: OptRec, skipped: bool) -> None:
        infos = list(rec.pending.values())
        batches = self.batches - rec.batch_mark if self.batches else None
        window = Window(len(infos), batches, skipped, rec.mixed_epochs, None,
                        infos[0].site if infos else None, rec.steps)
        for watcher in self.watchers:
            watcher.window_closing(rec, infos, window)
        rec.windows.append(window)
        self.windows_closed += 1
        consumed = set(rec.pending)
        for other in self.opts:  # a GAN: backward passes this step used are not the other's
            if other is not rec and other.pending:
                for key in consumed & other.pending.keys():
                    del other.pending[key]

    def _after_step(self, rec: OptRec) -> None:
        rec.steps += 1
        rec.reset_window(self.batches)
        self.total_steps += 1
        self.sampling_next = self.total_steps < self._sample_until
        for watcher in self.watchers:
            watcher.step_finished(rec)
        self.sampling = self.sampling_next
        if self.options.max_steps is not None and rec.steps >= self.options.max_steps:
            self.stopped = True
            raise StopTraining(self.total_steps)

    # ----- events for one watcher ---------------------------------------------------------
    def zeroed(self, recs: list[OptRec]) -> None:
        self.windows.zeroed(recs)

    def batch_fetched(self, iterator: Any) -> None:
        self.batches += 1
        self.windows.batch_fetched(iterator)

    def epoch_ended(self, iterator: Any) -> None:
        self.windows.epoch_ended(iterator)

    # ----- end of run -------------------------------------------------------------------
    def finish(self, completed: bool = True) -> None:
        """End-of-run checks; `completed` is False when the script died of an error."""
        for watcher in self.watchers:
            watcher.finish(completed)
