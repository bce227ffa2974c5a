"""The interface every watcher implements: the monitor tells each one what happened, in order;
a watcher keeps its own state and reports its own findings through the shared table."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accumlint.runtime.monitor import Monitor
    from accumlint.runtime.records import BackwardInfo, OptRec, Window


class Watcher:
    def __init__(self, monitor: "Monitor") -> None:
        self.monitor = monitor
        self.findings = monitor.findings

    def backward_started(self, info: "BackwardInfo") -> None:
        """Before autograd runs; `info.roots` are the tensors handed to backward."""

    def backward_finished(self, info: "BackwardInfo", recs: "list[OptRec]") -> None:
        """After a successful backward; `recs` are the optimizers whose parameters it reached."""

    def window_closing(self, rec: "OptRec", infos: "list[BackwardInfo]", window: "Window") -> None:
        """An optimizer step (or a skipped GradScaler step) ends the window of `infos`."""

    def step_finished(self, rec: "OptRec") -> None:
        """After the optimizer step and the window reset."""

    def finish(self, completed: bool) -> None:
        """End of the run; `completed` is False when the script died of an error."""
