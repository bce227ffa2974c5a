"""The state the watchers share: one record per backward pass, per optimizer and per window."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Optional

from accumlint.runtime.findings import Site
from accumlint.runtime.verdicts import Verdict


class ScalerRec:
    """One GradScaler, as the checker has seen it called (never its private state)."""

    def __init__(self, scaler: Any) -> None:
        self.ref = weakref.ref(scaler)
        self.scaled_since_update = False
        self.unscaled: set[int] = set()  # optimizers unscaled since the last update()
        self.awaiting_step: set[int] = set()  # unscaled and not stepped yet
        self.updates_at_step: Optional[int] = None
        self.extra_windows: set[int] = set()
        self.extra_site: Optional[Site] = None
        self.updates_per_step: dict[int, int] = {}  # the first optimizer steps' update() calls


class BackwardInfo:
    """One call of torch.autograd.backward (every `loss.backward()` goes through it)."""

    __slots__ = ("id", "site", "retain", "masses", "scaler", "old_nodes", "roots", "handles",
                 "synced", "buckets", "graph_ids", "new_nodes_since", "depth")

    def __init__(self, ident: int, site: Site, retain: bool, roots: tuple[Any, ...]) -> None:
        self.id = ident
        self.site = site
        self.retain = retain
        self.roots = roots
        self.masses: Optional[list[tuple[Any, bool]]] = None  # (tensor, exact) per loss node
        self.scaler: Optional[ScalerRec] = None
        self.old_nodes = 0  # graph nodes created before the previous optimizer step
        self.handles: list[Any] = []
        self.synced = False  # a DDP all-reduce ran during this backward
        self.buckets = 0
        self.graph_ids: frozenset[int] = frozenset()  # sampled: the graph's nodes, no leaves
        self.new_nodes_since = 0  # sampled: the graph's newest sequence number
        self.depth = 1  # sampled: how many backward graphs this one chains through


@dataclass
class Window:
    """The backward passes one optimizer step applied."""

    size: int
    batches: Optional[int]
    skipped: bool
    mixed_epochs: bool
    verdict: Optional[Verdict]
    site: Optional[Site]
    step: int
    weights: list[float] = field(default_factory=list)  # measured per micro-batch, if sampled
    synced: int = 0  # backward passes that all-reduced under DDP
    buckets: int = 0


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
        self.ended_iterator: Optional[weakref.ref[Any]] = None  # the DataLoader iterator that ended
        self.next_epoch_begun = False  # ... and another iterator has since given a batch
        self.mixed_epochs = False  # ... and more backward passes came after that
        self.zeroed_pending = False
        self.scaled_by: set[int] = set()
        self.last_seen: Optional[BackwardInfo] = None
        self.clipped_partial: Optional[tuple[Any, str]] = None  # (site, how) of a clip inside the open window

    def reset_window(self, batches: int) -> None:
        self.pending.clear()
        self.batch_mark = batches
        self.epoch_boundary = self.mixed_epochs = self.zeroed_pending = False
        self.next_epoch_begun = False
        self.ended_iterator = None
        self.scaled_by.clear()
        self.clipped_partial = None
