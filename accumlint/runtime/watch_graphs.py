"""Graph tracking: graphs kept across optimizer steps (ACC002), states carried from one backward
into the next (ACC003), and graphs retained for a backward that never comes (ACC006)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Iterable, Optional

from accumlint.runtime import graph, torch_private as tp, verdicts
from accumlint.runtime.findings import RuntimeFinding, Site, Table
from accumlint.runtime.frames import graph_variables, write_site
from accumlint.runtime.records import BackwardInfo, OptRec
from accumlint.runtime.watcher import Watcher

SECOND_BACKWARD = "backward through the graph a second time"
INPLACE_MODIFIED = "modified by an inplace operation"
CHAIN_DEPTH = 3  # graphs chained by one carried state before it is reported: 1, 2, 3 grows

Snapshot = list[tuple[str, Any, FrameType]]  # (variable, grad_fn, frame) at one backward


def base_names(names: Iterable[str]) -> list[str]:
    """`hidden[0]`, `hidden[1]` -> `hidden`, in first-seen order."""
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name.split("[")[0], None)
    return list(seen)


@dataclass
class _Retained:
    """A backward with retain_graph=True, kept until a later backward goes through it again."""

    info_id: int
    root: Any  # held so node ids stay unique while the record lives
    ids: frozenset[int]
    created: int  # optimizer steps so far when it ran
    site: Site
    depth: int
    seq_at: int  # the sequence number when it ran: newer nodes were made after it
    nodes: int
    snapshot: Snapshot
    parent: Optional["_Retained"] = None
    used: bool = False


@dataclass
class _Trace:
    """One user variable followed across frame scans."""
    scan: int = -1
    sizes: list[int] = field(default_factory=list)


class GraphWatcher(Watcher):
    def __init__(self, monitor: Any) -> None:
        super().__init__(monitor)
        self.watermark: Optional[int] = None  # sequence number at the previous step
        self._snapshot: Snapshot = []  # graph-holding variables at the last sampled backward
        self._prev_snapshot: Snapshot = []
        self._retained: list[_Retained] = []
        self._carried: set[str] = set()
        # per carrying frame: (site, variable, depth, measured rows); numbers only, so the
        # checker keeps no chained graph alive
        self._chains: dict[tuple[str, int], tuple[Site, str, int, list[tuple[int, ...]]]] = {}
        self._traces: dict[tuple[str, str, str], _Trace] = {}
        self._flagged_vars: set[tuple[str, str, str]] = set()
        self._scan_no = 0
        self._window_old = 0
        # per retain_graph site: (first rows of step and bytes held, graphs never used)
        self._unused: dict[tuple[str, int], tuple[list[tuple[int, int]], int]] = {}

    # ----- every sampled backward (and every backward while a retained graph waits) -------
    def backward_started(self, info: BackwardInfo) -> None:
        if not (self.monitor.sampling or self._retained):
            return
        ids: set[int] = set()
        newest = -1
        nodes = 0
        for root in info.roots:
            node = getattr(root, "grad_fn", None)
            if node is None:
                continue
            stats = graph.walk(node, self.watermark, keep_ids=True)
            info.old_nodes += stats.old_nodes
            ids |= stats.ids
            newest = max(newest, stats.max_seq if stats.max_seq is not None else -1)
            nodes += stats.nodes
        info.graph_ids = frozenset(ids)
        parent = self._chain(info, ids, newest, nodes)
        if info.retain and ids and self.monitor.sampling:
            self._retained.append(_Retained(
                info.id, info.roots[0].grad_fn, info.graph_ids, self.monitor.total_steps,
                info.site, info.depth, tp.current_sequence_nr(), nodes,
                self._variables(info), parent))
        if self.monitor.sampling:
            self._prev_snapshot = self._snapshot
            self._snapshot = self._variables(info)

    @staticmethod
    def _variables(info: BackwardInfo) -> Snapshot:
        root_ids = {id(r) for r in info.roots}
        return [(name, t.grad_fn, frame) for frame, name, t, _ in graph_variables()
                if id(t) not in root_ids]

    def _chain(self, info: BackwardInfo, ids: set[int], newest: int,
               nodes: int = 0) -> Optional[_Retained]:
        """Mark the retained graphs this backward goes through again; when it also goes
        through nodes made after them, a value carried out of them chains the graphs."""
        parent: Optional[_Retained] = None
        for record in self._retained:
            if not (record.ids & ids):
                continue
            record.used = True
            if newest > record.seq_at and record.depth + 1 > info.depth:
                info.depth, parent = record.depth + 1, record
        if parent is None:
            return None
        names = base_names(name for name, node, _ in parent.snapshot if id(node) in ids)
        if not names:
            return parent
        self._carried.update(names)
        if info.depth >= CHAIN_DEPTH:
            frame = next(f for n, node, f in parent.snapshot if n.split("[")[0] == names[0])
            key = (frame.f_code.co_filename, frame.f_code.co_firstlineno)
            best = self._chains.get(key)
            if best is None or info.depth > best[2]:
                rows = best[3] if best is not None else self._chain_rows(parent)
                held = tp.saved_bytes(info.roots[0].grad_fn) if info.depth <= 64 else -1
                rows = rows[:5] + [(info.id, info.depth, nodes, held)]
                self._chains[key] = (parent.site, names[0], info.depth, rows)
        return parent

    def backward_finished(self, info: BackwardInfo, recs: list[OptRec]) -> None:
        pass

    # ----- the error torch raises on a carried state ---------------------------------------
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
        names = base_names(name for name, node, _ in self._prev_snapshot if id(node) in ids)
        if not names:  # outside the sampled steps: every graph-holding variable is a suspect
            root_ids = {id(r) for r in roots}
            names = base_names(name for _, name, t, _ in graph_variables()
                               if id(t) not in root_ids)
        carried = names[0] if names else None
        shown = ", ".join(f"`{n}`" for n in names[:4]) or "a value carried between iterations"
        site = info.site if info else Site.here()
        found = self.findings.add("second-backward" if second else "stale-weights", site,
                                  say={"shown": shown}, carried=carried, suspects=names[:6],
                                  backward_calls=self.monitor.backward_count,
                                  nodes_before_last_step=old)
        fix = (f"`{carried} = {carried}.detach()` (for a tuple such as an LSTM's (h, c), detach "
               f"each tensor)" if carried else "`.detach()` on the carried state")
        return (f"\n\naccumlint: ACC003 {found.finding.message}. Fix: right after that "
                f"iteration's backward, {fix}. If several losses share one graph instead, sum "
                f"them and call backward once.")

    # ----- steps ----------------------------------------------------------------------------
    def window_closing(self, rec: OptRec, infos: list[BackwardInfo], window: Any) -> None:
        self._window_old = max((i.old_nodes for i in infos), default=0)

    def step_finished(self, rec: OptRec) -> None:
        mon = self.monitor
        if mon.sampling or mon.total_steps % mon.options.scan_every == 0:
            self._scan_frames()
        self._judge_retained(final=False)
        self.watermark = tp.current_sequence_nr()
        if not mon.sampling_next:
            self._snapshot = self._prev_snapshot = []

    def finish(self, completed: bool) -> None:
        self._judge_retained(final=True)
        self._report_chains()

    # ----- ACC002: user variables that reach past the previous step --------------------------
    def _scan_frames(self) -> None:
        if self.watermark is None:
            return
        self._scan_no += 1
        seen: set[tuple[str, str, str]] = set()
        for frame, name, tensor, length in graph_variables():
            base = name.split("[")[0]
            key = (frame.f_code.co_filename, frame.f_code.co_name, base)
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
            if self._window_old > 0 or base in self._carried:
                continue  # the graph is backward-ed through again: ACC003, not ACC002
            what = "list length" if length > 1 else "graph nodes"
            step = self.monitor.total_steps
            table = Table(("optimizer step", f"{what} reached by `{base}`"),
                          [(step - len(trace.sizes) + 1 + i, s) for i, s in enumerate(trace.sizes)])
            evidence: dict[str, Any] = {f"{what.replace(' ', '_')}_per_step": list(trace.sizes)}
            self.findings.add("kept-graph", write_site(frame, name), key=base, variable=base,
                              table=table, **evidence)

    # ----- ACC006 and the chained form of ACC003 -------------------------------------------
    def _judge_retained(self, final: bool) -> None:
        steps = self.monitor.total_steps
        for record in list(self._retained):
            if not (final or steps >= record.created + 2):
                continue
            self._retained.remove(record)
            if record.used or (final and steps < record.created + 1):
                continue  # passed through again, or its step never came: nothing to judge
            key = (record.site.filename, record.site.row)
            rows, total = self._unused.get(key, ([], 0))
            if len(rows) < 6:
                rows.append((record.created + 1, tp.saved_bytes(record.root)))
            self._unused[key] = (rows, total + 1)
            found = self.findings.add(
                "unused-retain", record.site, held_bytes=rows[0][1],
                table=Table(("optimizer step", "saved bytes held by the unused graph")))
            self._fill(found, rows, total + 1)

    @staticmethod
    def _fill(found: RuntimeFinding, rows: list[tuple[int, int]], total: int) -> None:
        if found.table is not None:
            found.table.rows = [tuple(r) for r in rows]
        found.evidence["graphs_never_used"] = found.count = total

    @staticmethod
    def _chain_rows(record: _Retained) -> list[tuple[int, ...]]:
        chain: list[_Retained] = []
        node: Optional[_Retained] = record
        while node is not None:
            chain.append(node)
            node = node.parent
        chain.reverse()
        return [(r.info_id, r.depth, r.nodes, tp.saved_bytes(r.root)) for r in chain[:5]]

    def _report_chains(self) -> None:
        for site, variable, depth, rows in self._chains.values():
            table = Table(("backward call", "graphs chained", "graph nodes reached",
                           "saved bytes held"), list(rows))
            self.findings.add("chained-graphs", site, say={"depth": depth, "variable": variable},
                              key="chain", carried=variable, graph_depth=depth, table=table)
