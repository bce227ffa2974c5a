"""ACC008 for LR schedulers: a scheduler stepped more than once per optimizer step."""

from __future__ import annotations

import sys
from typing import Any, Optional

from accumlint.runtime.findings import Site, Table, user_frames
from accumlint.runtime.watcher import Watcher


class _SchedRec:
    def __init__(self) -> None:
        self.opt_steps: Optional[int] = None
        self.calls_at_step: dict[int, int] = {}
        self.site: Optional[Site] = None
        self.last_call: Optional[tuple[int, int, int]] = None


class ScheduleWatcher(Watcher):
    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self._scheds: dict[int, _SchedRec] = {}

    def scheduler_stepped(self, sched: Any) -> None:
        rec = self.monitor.rec_for(getattr(sched, "optimizer", None))
        if rec is None:
            return
        srec = self._scheds.setdefault(id(sched), _SchedRec())
        # A wrapper may step the scheduler several times in one call of the user's (Accelerate
        # steps it once per process): one user call, at one place, with no backward between.
        frame = next(user_frames(sys._getframe(1)), None)
        call = (id(frame), frame.f_lasti if frame else -1, self.monitor.backward_count)
        if call == srec.last_call:
            return
        srec.last_call = call
        srec.calls_at_step[rec.steps] = srec.calls_at_step.get(rec.steps, 0) + 1
        if srec.opt_steps == rec.steps:
            srec.site = srec.site or Site.here()
        srec.opt_steps = rec.steps

    def finish(self, completed: bool) -> None:
        for srec in self._scheds.values():
            extra = {step: n for step, n in srec.calls_at_step.items() if n > 1}
            if len(extra) >= 2:
                table = Table(("optimizer step", "scheduler steps"),
                              [(step, n) for step, n in sorted(srec.calls_at_step.items())][:6])
                self.findings.add("scheduler", srec.site, table=table,
                                  windows_with_extra_steps=len(extra))
