"""Window accounting: the weight each micro-batch loss enters backward with (ACC001, ACC010),
zeroing inside a window (ACC007) and windows that never reach a step (ACC005)."""

from __future__ import annotations

import weakref
from typing import Any, Optional

import torch

from accumlint.runtime import graph, torch_private as tp, verdicts
from accumlint.runtime.findings import Site, Table, shorten
from accumlint.runtime.records import BackwardInfo, OptRec, Window
from accumlint.runtime.watcher import Watcher


class MassProbe:
    """Pre-hook on a loss node: its incoming gradient is d(root)/d(loss), the loss's weight."""

    __slots__ = ("masses", "count", "exact", "done")

    def __init__(self, masses: list[tuple[Any, bool]], count: Any, exact: bool) -> None:
        self.masses, self.count, self.exact, self.done = masses, count, exact, False

    def __call__(self, grad_outputs: Any) -> None:
        if self.done:  # a retained graph backward-ed again: the first pass is the one we measure
            return None
        self.done = True
        grad = grad_outputs[0]
        if grad is None or grad.numel() != 1:
            self.masses.append((None, False))
        else:
            self.masses.append((grad.detach().reshape(()).float() * self.count, self.exact))
        return None


def attach_probe(info: BackwardInfo, root_node: Any) -> None:
    info.masses = []
    for node in graph.loss_nodes(root_node):
        count, exact = tp.loss_count(node)
        info.handles.append(node.register_prehook(MassProbe(info.masses, count, exact)))


class WindowWatcher(Watcher):
    def backward_started(self, info: BackwardInfo) -> None:
        if not self.monitor.sampling:
            return
        for root in info.roots:
            node = getattr(root, "grad_fn", None)
            if node is not None and root.numel() == 1:
                attach_probe(info, node)

    def window_closing(self, rec: OptRec, infos: list[BackwardInfo], window: Window) -> None:
        if window.skipped or rec.zeroed_pending or any(i.retain for i in infos):
            return
        if window.batches is not None and window.batches < 2:
            return  # one DataLoader batch split by hand, or several losses of one batch
        measured = self._weigh(infos, window.batches)
        if measured is None:
            return
        window.verdict, window.weights = measured
        if rec.epoch_boundary and window.verdict is not None and window.verdict.kind in (
                "underdivided", "overdivided"):
            # the data ran out inside this window: a short last window divided by k is the
            # epoch's flush, not a wrong divisor (with an epoch shorter than k, every window is)
            window.verdict = None

    def _weigh(self, infos: list[BackwardInfo],
               batches: Optional[int]) -> Optional[tuple[Optional[verdicts.Verdict], list[float]]]:
        if not infos or any(i.masses is None for i in infos):
            return None
        flat = [m for i in infos for m, _ in (i.masses or [])]
        if not flat or any(m is None for m in flat):
            return None
        values = torch.stack(flat).tolist()  # the one host sync of a sampled step
        scales: dict[int, float] = {}
        per_bw: list[list[tuple[float, bool]]] = []
        pos = 0
        for info in infos:
            masses = info.masses or []
            divide = 1.0
            if info.scaler is not None:
                scaler = info.scaler.ref()
                if scaler is None:
                    return None
                divide = scales.setdefault(id(scaler), float(scaler.get_scale()))
            per_bw.append([(values[pos + j] / divide, exact) for j, (_, exact) in enumerate(masses)])
            pos += len(masses)
        weights = [sum(m for m, _ in per) for per in per_bw]
        return verdicts.weigh_window(per_bw, batches), weights

    # ----- zeroing and epochs -----------------------------------------------------------
    def zeroed(self, recs: list[OptRec]) -> None:
        for rec in recs:
            if rec.in_step or not rec.pending:
                continue
            dropped = len(rec.pending)
            site = Site.here()
            if rec.epoch_boundary and not rec.mixed_epochs:
                self.findings.add("dropped", site, dropped_backward_passes=dropped,
                                  optimizer=rec.name)
            else:
                found = self.findings.add("zero-in-window", site, dropped_backward_passes=dropped,
                                          optimizer=rec.name, at_step=rec.steps,
                                          table=Table(("optimizer step", "backward passes "
                                                       "dropped by zero_grad")))
                if found.table is not None and len(found.table.rows) < 6:
                    found.table.rows.append((rec.steps, dropped))
            rec.pending.clear()
            rec.zeroed_pending = True
            rec.epoch_boundary = rec.mixed_epochs = False

    def epoch_ended(self, iterator: Any) -> None:
        for rec in self.monitor.opts:
            if rec.pending and not rec.in_step:
                rec.epoch_boundary = True
                rec.ended_iterator = weakref.ref(iterator)  # an id could be reused by the next

    def batch_fetched(self, iterator: Any) -> None:
        # A loader that reads one batch ahead (Accelerate's) ends its epoch before the last
        # batch is used: only a batch from another iterator starts the next epoch.
        for rec in self.monitor.opts:
            ended = rec.ended_iterator() if rec.ended_iterator is not None else None
            if rec.epoch_boundary and ended is not iterator:
                rec.next_epoch_begun = True

    # ----- end of run -------------------------------------------------------------------
    def finish(self, completed: bool) -> None:
        for rec in self.monitor.opts:
            self._judge_windows(rec)
            if rec.pending and completed and not self.monitor.stopped and not rec.in_step:
                infos = list(rec.pending.values())
                self.findings.add("run-end", infos[-1].site, pending_backward_passes=len(infos),
                                  optimizer=rec.name)

    def _judge_windows(self, rec: OptRec) -> None:
        modal = verdicts.modal_size([w.size for w in rec.windows if not w.skipped])
        if modal is None:
            return
        for w in rec.windows:
            if w.mixed_epochs and w.size != modal and w.site is not None:
                sizes = [(x.step, x.size) for x in rec.windows if abs(x.step - w.step) <= 2]
                self.findings.add("stale", w.site, key=str(w.step), window_size=w.size,
                                  usual_window_size=modal, at_step=w.step, optimizer=rec.name,
                                  table=Table(("optimizer step", "backward passes applied"),
                                              sizes))
        judged = [w for w in rec.windows if w.size == modal and w.verdict is not None]
        kinds = {w.verdict.kind for w in judged if w.verdict is not None}
        first = judged[0].verdict if judged else None
        if first is None or len(kinds) != 1 or first.kind == "ok":
            return
        sums = [round(w.verdict.weight_sum, 4) for w in judged if w.verdict is not None]
        table = Table(("optimizer step", "weight of each micro-batch loss", "sum"),
                      [(w.step + 1, [round(x, 4) for x in w.weights], round(sum(w.weights), 4))
                       for w in shorten(judged, 5)])
        divisor = first.divisor or 1
        evidence: dict[str, Any] = dict(window=modal, weight_sum_per_step=shorten(sums),
                                        steps_measured=len(judged), optimizer=rec.name)
        if first.kind != "undivided":
            evidence["divisor"] = divisor
        self.findings.add(first.kind, judged[0].site, table=table,
                          say={"k": modal, "divisor": divisor, "ratio": modal / divisor},
                          **evidence)
