"""The runtime checker's state machine: it is told about backward passes, optimizer steps,
zeroing, scaler calls, clipping, scheduler steps and epoch ends (by the wrappers in
patches.py), keeps each optimizer's accumulation window, and turns what it sees into findings
under the static checker's codes. Cheap host-side accounting is always on; the probe and the
graph walks only run during the sampled steps."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from accumlint.runtime import graph, torch_private as tp, verdicts
from accumlint.runtime.findings import Findings, Site
from accumlint.runtime.frames import graph_variables, write_site

SECOND_BACKWARD = "backward through the graph a second time"
UNSCALE_TWICE = "unscale_() has already been called"
NO_INF_CHECKS = "No inf checks were recorded"
INPLACE_MODIFIED = "modified by an inplace operation"


def _base_names(names) -> list[str]:
    """`hidden[0]`, `hidden[1]` -> `hidden`, in first-seen order."""
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name.split("[")[0], None)
    return list(seen)


class StopTraining(BaseException):
    """Raised after --max-steps optimizer steps; a BaseException so `except Exception` lets it by."""


@dataclass
class Options:
    max_steps: Optional[int] = None
    sample_steps: int = 20  # steps with the probe and graph walks on
    scan_every: int = 50  # after the sampled steps, a frame scan every this many steps


class BackwardInfo:
    __slots__ = ("id", "site", "retain", "masses", "scaler", "old_nodes", "roots", "handles")

    def __init__(self, ident: int, site: Site, retain: bool) -> None:
        self.id = ident
        self.site = site
        self.retain = retain
        self.masses: Optional[list[tuple[Any, bool]]] = None  # (tensor, exact) per loss node
        self.scaler: Optional[ScalerRec] = None
        self.old_nodes = 0
        self.roots: tuple = ()
        self.handles: list = []


@dataclass
class Window:
    size: int
    batches: Optional[int]
    skipped: bool
    mixed_epochs: bool
    verdict: Optional[verdicts.Verdict]
    site: Optional[Site]
    step: int


class OptRec:
    """One optimizer's accounting; kept strongly so end-of-run checks outlive the optimizer."""

    def __init__(self, opt: Any, serial: int) -> None:
        self.ref = weakref.ref(opt)
        self.name = f"{type(opt).__name__}#{serial}"
        self.param_ids: set[int] = set()
        self.pending: dict[int, BackwardInfo] = {}
        self.steps = 0
        self.in_step = False
        self.hooked_step = False
        self.windows: list[Window] = []
        self.batch_mark = 0
        self.epoch_boundary = False  # an epoch ended while backward passes were pending
        self.mixed_epochs = False  # ... and more backward passes came after it
        self.zeroed_pending = False
        self.scaled_by: set[int] = set()
        self.last_seen: Optional[BackwardInfo] = None

    def reset_window(self, batches: int) -> None:
        self.pending.clear()
        self.batch_mark = batches
        self.epoch_boundary = self.mixed_epochs = self.zeroed_pending = False
        self.scaled_by.clear()


class ScalerRec:
    def __init__(self, scaler: Any) -> None:
        self.ref = weakref.ref(scaler)
        self.scaled_since_update = False
        self.unscaled: set[int] = set()  # optimizers unscaled since the last update()
        self.awaiting_step: set[int] = set()  # unscaled and not stepped yet
        self.updates_at_step: Optional[int] = None
        self.extra_windows: set[int] = set()
        self.extra_site: Optional[Site] = None


class SchedRec:
    def __init__(self) -> None:
        self.opt_steps: Optional[int] = None
        self.extra_windows: set[int] = set()
        self.extra_site: Optional[Site] = None


@dataclass
class _Retained:
    root: Any  # held so node ids stay unique until the record is judged
    ids: set[int]
    created: int
    site: Site


@dataclass
class _Trace:
    """One user variable followed across frame scans."""
    scan: int = -1
    sizes: list[int] = field(default_factory=list)


class Monitor:
    def __init__(self, options: Optional[Options] = None) -> None:
        self.options = options or Options()
        self.findings = Findings()
        self.opts: list[OptRec] = []
        self._opt_by_id: dict[int, OptRec] = {}
        self._param_recs: dict[int, list[OptRec]] = {}
        self._hook_handles: list[Any] = []
        self.scalers: dict[int, ScalerRec] = {}
        self._scaled_roots: dict[int, tuple[Any, ScalerRec]] = {}
        self.schedulers: dict[int, SchedRec] = {}
        self.current: Optional[BackwardInfo] = None
        self._touched: list[OptRec] = []
        self.backward_count = 0
        self.batches = 0
        self.total_steps = 0
        self.stopped = False
        self.sampling = self.options.sample_steps > 0
        # graph-age bookkeeping
        self.watermark: Optional[int] = None  # sequence number at the previous step
        self._snapshot: list[tuple[str, Any, Any]] = []  # (name, grad_fn, frame) at last backward
        self._prev_snapshot: list[tuple[str, Any, Any]] = []  # ... and at the one before
        self._carried: dict[str, Site] = {}
        self._retained: list[_Retained] = []
        self._traces: dict[tuple, _Trace] = {}
        self._flagged_vars: set[tuple] = set()
        self._old_growth: list[int] = []
        self._scan_no = 0
        self._window_old = 0

    # ----- optimizers -------------------------------------------------------------------
    def rec_for(self, opt: Any) -> Optional[OptRec]:
        rec = self._opt_by_id.get(id(opt))
        if rec is not None and rec.ref() is opt:
            return rec
        return None

    def register_params(self, opt: Any, params: list) -> None:
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

    def _make_hook(self, rec: OptRec):
        def on_grad_accumulated(_param, rec=rec, mon=self):
            info = mon.current
            if info is None or rec.last_seen is info:
                return
            rec.last_seen = info
            mon._touched.append(rec)
        return on_grad_accumulated

    def recs_for_params(self, params) -> list[OptRec]:
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
    def before_backward(self, roots: tuple, retain: bool) -> BackwardInfo:
        self.backward_count += 1
        info = BackwardInfo(self.backward_count, Site.here(), retain)
        info.roots = roots
        for root in roots:
            entry = self._scaled_roots.get(id(root))
            if entry is not None and entry[0]() is root:
                info.scaler = entry[1]
        if self.sampling or self._retained:
            self._inspect_roots(info, roots)
        self._touched = []
        self.current = info
        return info

    def _inspect_roots(self, info: BackwardInfo, roots: tuple) -> None:
        """Sampled: attach the loss-weight probe, and measure how far back the graph reaches."""
        ids: set[int] = set()
        for root in roots:
            node = getattr(root, "grad_fn", None)
            if node is None:
                continue
            stats = graph.walk(node, self.watermark, keep_ids=True)
            info.old_nodes += stats.old_nodes
            ids |= stats.ids
            if self.sampling and root.numel() == 1:
                self._attach_probe(info, node)
        for name, node, frame in self._snapshot:
            if id(node) in ids:
                self._carried.setdefault(name, Site(frame.f_code.co_filename, frame.f_lineno or 1))
        for record in list(self._retained):
            if record.ids & ids:
                self._retained.remove(record)
        if info.retain and ids:
            self._retained.append(_Retained(roots[0].grad_fn, ids, self.total_steps, info.site))
        if self.sampling:
            root_ids = {id(r) for r in roots}
            self._prev_snapshot = self._snapshot
            self._snapshot = [(name, t.grad_fn, frame) for frame, name, t, _ in graph_variables()
                              if id(t) not in root_ids]

    def _attach_probe(self, info: BackwardInfo, root_node: Any) -> None:
        info.masses = []
        for node in graph.loss_nodes(root_node):
            count, exact = tp.loss_count(node)
            info.handles.append(node.register_prehook(_MassProbe(info.masses, count, exact)))

    @staticmethod
    def release(info: BackwardInfo) -> None:
        for handle in info.handles:
            handle.remove()
        info.handles = []

    def backward_failed(self, info: Optional[BackwardInfo], error: RuntimeError) -> Optional[str]:
        """A hint to append to torch's error, after recording the finding it shows.

        Two errors come from a state carried across iterations without detach: the second
        backward through a freed graph, and, when retain_graph=True kept that graph, the
        optimizer's in-place update of weights the old graph saved."""
        text = str(error)
        second = SECOND_BACKWARD in text
        if not second and INPLACE_MODIFIED not in text:
            return None
        roots = info.roots if info else ()
        ids: set[int] = set()
        old = 0
        for root in roots:
            if getattr(root, "grad_fn", None) is not None:
                stats = graph.walk(root.grad_fn, self.watermark, keep_ids=True)
                ids |= stats.ids
                old += stats.old_nodes
        if not second and old == 0:
            return None  # an in-place bug within one step: not a carried state
        names = _base_names(name for name, node, _ in self._prev_snapshot if id(node) in ids)
        if not names:  # outside the sampled steps: every graph-holding variable is a suspect
            root_ids = {id(r) for r in roots}
            names = _base_names(name for _, name, t, _ in graph_variables()
                                if id(t) not in root_ids)
        carried = names[0] if names else None
        shown = ", ".join(f"`{n}`" for n in names[:4]) or "a value carried between iterations"
        what = ("backward reached a graph an earlier backward already freed" if second else
                "backward reached a graph from before the last optimizer step (kept by "
                "retain_graph=True), whose saved weights the step has since changed")
        message = (f"{what}, through {shown}: a value from one iteration is read in the next "
                   f"without detach")
        site = info.site if info else Site.here()
        self.findings.add("ACC003", message, site, kind="second-backward",
                          carried=carried, suspects=names[:6], backward_calls=self.backward_count,
                          nodes_before_last_step=old)
        fix = (f"`{carried} = {carried}.detach()` (for a tuple such as an LSTM's (h, c), detach "
               f"each tensor)" if carried else "`.detach()` on the carried state")
        return (f"\n\naccumlint: ACC003 {message}. Fix: right after that iteration's backward, "
                f"{fix}. If several losses share one graph instead, sum them and call backward "
                f"once.")

    def after_backward(self, info: BackwardInfo) -> None:
        self.current = None
        touched = self._touched
        self._touched = []
        if not touched:
            live = [r for r in self.opts if r.ref() is not None]
            if len(live) == 1:  # FSDP2 defers param hooks to the sync step: one optimizer owns it
                touched = live
        for rec in touched:
            if rec.in_step:  # LBFGS-style closure: part of the step itself
                continue
            if rec.epoch_boundary:
                rec.mixed_epochs = True
            rec.pending[info.id] = info
            if info.scaler is not None:
                rec.scaled_by.add(id(info.scaler))
            for scaler in self.scalers.values():
                if id(rec) in scaler.awaiting_step:
                    self.findings.add(
                        "ACC004", "backward after scaler.unscale_() and before the step: "
                        "scaled and unscaled gradients are mixed", info.site, kind="after-unscale",
                        optimizer=rec.name)

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
        verdict = None
        if not skipped and not rec.zeroed_pending and not any(i.retain for i in infos):
            if batches is None or batches >= 2:
                verdict = self._weigh(infos, batches)
        rec.windows.append(Window(len(infos), batches, skipped, rec.mixed_epochs, verdict,
                                  infos[0].site if infos else None, rec.steps))
        self._window_old = max((i.old_nodes for i in infos), default=0)
        consumed = set(rec.pending)
        for other in self.opts:
            if other is not rec and other.pending:
                for key in consumed & other.pending.keys():
                    del other.pending[key]
        for scaler in self.scalers.values():
            scaler.awaiting_step.discard(id(rec))

    def _weigh(self, infos: list[BackwardInfo], batches: Optional[int]) -> Optional[verdicts.Verdict]:
        if not infos or any(i.masses is None for i in infos):
            return None
        flat = [m for i in infos for m, _ in i.masses]
        if not flat or any(m is None for m in flat):
            return None
        values = torch.stack(flat).tolist()  # the one host sync of a sampled step
        scales: dict[int, float] = {}
        per_bw, pos = [], 0
        for info in infos:
            divide = 1.0
            if info.scaler is not None:
                scaler = info.scaler.ref()
                if scaler is None:
                    return None
                divide = scales.setdefault(id(scaler), float(scaler.get_scale()))
            per_bw.append([(values[pos + j] / divide, exact)
                           for j, (_, exact) in enumerate(info.masses)])
            pos += len(info.masses)
        return verdicts.weigh_window(per_bw, batches)

    def _after_step(self, rec: OptRec) -> None:
        rec.steps += 1
        rec.reset_window(self.batches)
        self.total_steps += 1
        step = self.total_steps
        scan = self.sampling or step % self.options.scan_every == 0
        if scan:
            self._old_growth.append(self._window_old)
            self._scan_frames()
        self._judge_retained(final=False)
        self.sampling = step < self.options.sample_steps
        self.watermark = tp.current_sequence_nr()
        if not self.sampling:
            self._snapshot = self._prev_snapshot = []
        if self.options.max_steps is not None and rec.steps >= self.options.max_steps:
            self.stopped = True
            raise StopTraining(step)

    # ----- kept graphs (ACC002, ACC003 under retain_graph, ACC006) -----------------------
    def _scan_frames(self) -> None:
        if self.watermark is None:
            return
        self._scan_no += 1
        carried_growth = verdicts.strictly_growing(self._old_growth)
        if carried_growth and self._window_old > 0:
            self._report_carried_growth()
        seen: set[tuple] = set()
        for frame, name, tensor, length in graph_variables():
            key = (frame.f_code.co_filename, frame.f_code.co_name, name.split("[")[0])
            if key in seen or key in self._flagged_vars:
                continue
            seen.add(key)
            stats = graph.walk(tensor.grad_fn, self.watermark)
            trace = self._traces.setdefault(key, _Trace())
            if stats.old_nodes == 0:
                trace.sizes = []
                continue
            size = length if length > 1 else stats.nodes
            if stats.capped and trace.sizes:
                size = trace.sizes[-1] + 1
            if trace.scan != self._scan_no - 1:
                trace.sizes = []
            trace.scan = self._scan_no
            trace.sizes.append(size)
            if not verdicts.strictly_growing(trace.sizes):
                continue
            self._flagged_vars.add(key)
            if self._window_old > 0 or name.split("[")[0] in self._carried:
                continue  # the graph is backward-ed through again: ACC003, reported above
            what = "list" if length > 1 else "graph nodes"
            self.findings.add(
                "ACC002", f"`{name.split('[')[0]}` keeps the autograd graph of past micro-batches "
                f"alive across optimizer steps; detach what it stores (`loss.detach()`)",
                write_site(frame, name), kind=name, variable=name.split("[")[0],
                **{f"{what.replace(' ', '_')}_per_step": list(trace.sizes)})

    def _report_carried_growth(self) -> None:
        if self.findings.has("ACC003"):
            return
        names = list(self._carried)
        site = self._carried[names[0]] if names else Site.here()
        shown = ", ".join(f"`{n}`" for n in names[:3]) or "a carried value"
        self.findings.add(
            "ACC003", f"each backward reaches further into earlier steps' graphs through {shown} "
            f"(retain_graph=True hides the error): detach the carried state after backward",
            site, kind="carried-growth", carried=names[:3],
            old_nodes_per_step=self._old_growth[-4:])

    def _judge_retained(self, final: bool) -> None:
        for record in list(self._retained):
            if final or self.total_steps >= record.created + 2:
                self._retained.remove(record)
                if final and self.total_steps < record.created + 1:
                    continue  # its step never came; nothing to judge
                held = tp.saved_bytes(record.root)
                self.findings.add(
                    "ACC006", "backward(retain_graph=True) kept a graph that no later backward "
                    "used: its saved tensors stay in memory; drop retain_graph or sum the losses "
                    "and call backward once", record.site, kind="unused-retain",
                    held_bytes=held)

    # ----- zeroing, data, scheduling ----------------------------------------------------
    def zeroed(self, recs: list[OptRec]) -> None:
        for rec in recs:
            if rec.in_step or not rec.pending:
                continue
            dropped = len(rec.pending)
            site = Site.here()
            if rec.epoch_boundary and not rec.mixed_epochs:
                self.findings.add(
                    "ACC005", "gradients of the epoch's last, partial window are zeroed without "
                    "a step: those micro-batches never reach the optimizer", site, kind="dropped",
                    dropped_backward_passes=dropped, optimizer=rec.name)
            else:
                self.findings.add(
                    "ACC007", "gradients are zeroed while backward passes of the accumulation "
                    "window are pending: only the last micro-batch reaches the step", site,
                    kind="zero-in-window", dropped_backward_passes=dropped, optimizer=rec.name,
                    at_step=rec.steps)
            rec.pending.clear()
            rec.zeroed_pending = True
            rec.epoch_boundary = rec.mixed_epochs = False

    def batch_fetched(self) -> None:
        self.batches += 1

    def epoch_ended(self) -> None:
        for rec in self.opts:
            if rec.pending and not rec.in_step:
                rec.epoch_boundary = True

    def scheduler_stepped(self, sched: Any) -> None:
        rec = self.rec_for(getattr(sched, "optimizer", None))
        if rec is None:
            return
        srec = self.schedulers.setdefault(id(sched), SchedRec())
        if srec.opt_steps == rec.steps:
            srec.extra_windows.add(rec.steps)
            srec.extra_site = srec.extra_site or Site.here()
        srec.opt_steps = rec.steps

    # ----- GradScaler and clipping ------------------------------------------------------
    def scaler_rec(self, scaler: Any) -> ScalerRec:
        srec = self.scalers.get(id(scaler))
        if srec is None or srec.ref() is not scaler:
            srec = self.scalers[id(scaler)] = ScalerRec(scaler)
        return srec

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
        rec = self.rec_for(opt)
        if rec is None or not scaler.is_enabled():
            return
        srec = self.scaler_rec(scaler)
        srec.unscaled.add(id(rec))
        srec.awaiting_step.add(id(rec))

    def unscale_failed(self, error: RuntimeError) -> Optional[str]:
        if UNSCALE_TWICE not in str(error):
            return None
        message = ("scaler.unscale_() runs on every micro-step: unscale once per window, in the "
                   "step block right before clipping")
        self.findings.add("ACC004", message, Site.here(), kind="unscale-twice")
        return f"\n\naccumlint: ACC004 {message}."

    def updated(self, scaler: Any) -> None:
        srec = self.scaler_rec(scaler)
        srec.scaled_since_update = False
        srec.unscaled.clear()
        if srec.updates_at_step == self.total_steps and scaler.is_enabled():
            srec.extra_windows.add(self.total_steps)
            srec.extra_site = srec.extra_site or Site.here()
        srec.updates_at_step = self.total_steps

    def update_failed(self, error: Exception) -> Optional[str]:
        if NO_INF_CHECKS not in str(error):
            return None
        message = ("scaler.update() runs before any scaler.step() of the window: call it once "
                   "per window, right after scaler.step()")
        self.findings.add("ACC008", message, Site.here(), kind="update-before-step")
        return f"\n\naccumlint: ACC008 {message}."

    def clipping(self, params: list, how: str) -> None:
        for rec in self.recs_for_params(params):
            if not rec.pending:
                continue
            for key in rec.scaled_by:
                srec = next((s for s in self.scalers.values() if id(s) == key), None)
                if srec is None or id(rec) in srec.unscaled:
                    continue
                scaler = srec.ref()
                if scaler is None or not scaler.is_enabled():
                    continue
                self.findings.add(
                    "ACC004", f"{how} runs on gradients still multiplied by the GradScaler's "
                    "scale: call scaler.unscale_(optimizer) right before it", Site.here(),
                    kind="clip-scaled", optimizer=rec.name,
                    scale=float(scaler.get_scale()))

    # ----- end of run -------------------------------------------------------------------
    def finish(self, completed: bool = True) -> None:
        """End-of-run checks; `completed` is False when the script died of an error."""
        self._judge_retained(final=True)
        for rec in self.opts:
            self._judge_windows(rec)
            if rec.pending and completed and not self.stopped and not rec.in_step:
                infos = list(rec.pending.values())
                self.findings.add(
                    "ACC005", "the script ended with gradients of backward passes that no "
                    "optimizer step applied (the last, partial window)", infos[-1].site,
                    kind="run-end", pending_backward_passes=len(infos), optimizer=rec.name)
        for srec in self.schedulers.values():
            if len(srec.extra_windows) >= 2:
                self.findings.add(
                    "ACC008", "the LR scheduler steps more than once per optimizer step: the "
                    "schedule runs k times too fast; step it in the step block",
                    srec.extra_site, kind="scheduler",
                    windows_with_extra_steps=len(srec.extra_windows))
        for srec in self.scalers.values():
            if len(srec.extra_windows) >= 2:
                self.findings.add(
                    "ACC008", "scaler.update() runs more than once per optimizer step; call it "
                    "once per window, right after scaler.step()", srec.extra_site,
                    kind="scaler-update", windows_with_extra_updates=len(srec.extra_windows))

    def _judge_windows(self, rec: OptRec) -> None:
        modal = verdicts.modal_size([w.size for w in rec.windows if not w.skipped])
        if modal is None:
            return
        for w in rec.windows:
            if w.mixed_epochs and w.size != modal and w.site is not None:
                self.findings.add(
                    "ACC005", "an epoch's partial last window leaked into the next epoch's first "
                    "step: its gradients were applied together with the next window's",
                    w.site, kind="stale", window_size=w.size, usual_window_size=modal,
                    at_step=w.step, optimizer=rec.name)
        judged = [w for w in rec.windows if w.size == modal and w.verdict is not None]
        if not judged or any(w.verdict.kind != judged[0].verdict.kind for w in judged):
            return
        kind = judged[0].verdict.kind
        if kind == "ok":
            return
        sums = [round(w.verdict.weight_sum, 4) for w in judged]
        evidence = dict(window=modal, weight_sum_per_step=sums, steps_measured=len(judged),
                        optimizer=rec.name)
        site = judged[0].site
        divisor = judged[0].verdict.divisor
        if kind == "undivided":
            self.findings.add(
                "ACC001", f"each micro-batch loss entered backward with weight about 1, so the "
                f"{modal} accumulated gradients sum to about {modal}x the mean: divide the loss "
                f"by the number of accumulation steps", site, kind=kind, **evidence)
        elif kind == "underdivided":
            self.findings.add(
                "ACC001", f"each micro-batch loss was divided by {divisor} but the window has "
                f"{modal} backward passes: the step applies {modal / divisor:.3g}x the mean "
                f"gradient", site, kind=kind, divisor=divisor, **evidence)
        else:
            self.findings.add(
                "ACC010", f"each micro-batch loss was divided by {divisor} for a window of "
                f"{modal}: the step applies {modal / divisor:.3g}x the mean gradient (divided "
                f"twice?)", site, kind=kind, divisor=divisor, **evidence)


class _MassProbe:
    """Pre-hook on a loss node: its incoming gradient is d(root)/d(loss), the loss's weight."""

    __slots__ = ("masses", "count", "exact", "done")

    def __init__(self, masses: list, count: Any, exact: bool) -> None:
        self.masses, self.count, self.exact, self.done = masses, count, exact, False

    def __call__(self, grad_outputs):
        if self.done:  # a retained graph backward-ed again: the first pass is the one we measure
            return None
        self.done = True
        grad = grad_outputs[0]
        if grad is None or grad.numel() != 1:
            self.masses.append((None, False))
        else:
            self.masses.append((grad.detach().reshape(()).float() * self.count, self.exact))
        return None
