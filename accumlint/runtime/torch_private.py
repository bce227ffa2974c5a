"""Every private or undocumented torch detail the runtime checker relies on, in one place.

tests/runtime/test_torch_private.py pins each of these on the installed torch; when a torch
upgrade breaks one, that test names it. Everything else uses public API only.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

# Autograd nodes that only rescale or reshape a scalar loss on its way to backward: the probe
# walks through them to reach the node that reduces the loss (runtime-notes.md, section 1).
_TRANSPARENT_PREFIXES = (
    "MulBackward", "DivBackward", "AddBackward", "SubBackward", "RsubBackward", "NegBackward",
    "ToCopyBackward", "CloneBackward", "ViewBackward", "ReshapeAliasBackward", "UnsqueezeBackward",
    "SqueezeBackward", "ExpandBackward", "AliasBackward", "UnsafeViewBackward",
)
_MEAN, _SUM = 1, 2  # at::Reduction values saved as `_saved_reduction`
_UINT64 = 1 << 64


def node_name(node: Any) -> str:
    """The generated class name of an autograd node, e.g. 'NllLossBackward0'."""
    return type(node).__name__


def is_transparent(node: Any) -> bool:
    return node_name(node).startswith(_TRANSPARENT_PREFIXES)


def is_accumulate_grad(node: Any) -> bool:
    return node_name(node) == "AccumulateGrad"


def sequence_nr(node: Any) -> int:
    """Creation order of a node within its thread (private `Node._sequence_nr`)."""
    return node._sequence_nr()


def current_sequence_nr() -> int:
    """The sequence number the next node would get, read off a throwaway node."""
    with torch.enable_grad():
        node: Any = torch.empty(0, requires_grad=True).view(0).grad_fn
        return int(node._sequence_nr())


def loss_count(node: Any) -> tuple[Any, bool]:
    """How many per-sample terms a loss node sums: (count, exact).

    A mean-reduced loss counts 1. An nll/cross-entropy loss with reduction='sum' counts its
    non-ignored targets. Other sums have no natural unit, so they are marked inexact.
    """
    reduction = getattr(node, "_saved_reduction", None)
    name = node_name(node)
    if reduction == _SUM:
        if name.startswith("NllLoss"):
            target = node._saved_target
            ignore = int(node._saved_ignore_index)
            if ignore >= 1 << 63:  # saved as an unsigned 64-bit value: -100 reads as 2**64 - 100
                ignore -= _UINT64
            return (target != ignore).sum(), True
        return 1, False
    if reduction is None and name.startswith("SumBackward"):
        return 1, False
    return 1, True


def dataloader_iter_class() -> Optional[type]:
    """The base class of every DataLoader iterator; its `__next__` raises StopIteration at epoch end."""
    from torch.utils.data import dataloader

    return getattr(dataloader, "_BaseDataLoaderIter", None)


def scheduler_classes() -> list[type]:
    """LRScheduler and each torch scheduler that defines its own `step`."""
    from torch.optim import lr_scheduler

    base = lr_scheduler.LRScheduler
    return [cls for cls in vars(lr_scheduler).values()
            if isinstance(cls, type) and issubclass(cls, base) and "step" in cls.__dict__]


def saved_bytes(root_node: Any, cap: int = 20_000) -> int:
    """Bytes of the tensors a graph still saves for backward, read off the generated `_saved_*`
    attributes (0 once backward has freed them: reading a freed one raises)."""
    seen_nodes: set[int] = set()
    seen_storage: set[int] = set()
    total = 0
    stack = [root_node]
    while stack and len(seen_nodes) < cap:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except RuntimeError:  # freed by an earlier backward
                continue
            if isinstance(value, torch.Tensor) and value.numel() and not (
                    value.is_leaf and value.requires_grad):  # parameters live on anyway
                storage = value.untyped_storage()
                if storage.data_ptr() not in seen_storage:
                    seen_storage.add(storage.data_ptr())
                    total += storage.nbytes()
        stack.extend(child for child, _ in getattr(node, "next_functions", ()))
    return total


def loss_units(node: Any) -> Optional[tuple[str, int]]:
    """("mean" or "sum", how many terms) for a loss node whose reduction is known, else None.

    Read before backward frees the saved tensors. A class-weighted nll loss is a weighted mean
    whose unit is not a count: None."""
    name = node_name(node)
    if name.startswith("MeanBackward0"):
        return "mean", int(node._saved_self_sym_numel)
    if name.startswith("SumBackward0"):
        sizes = node._saved_self_sym_sizes
        count = 1
        for size in sizes:
            count *= int(size)
        return "sum", count
    reduction = getattr(node, "_saved_reduction", None)
    if reduction not in (_MEAN, _SUM):
        return None
    kind = "mean" if reduction == _MEAN else "sum"
    if name.startswith("NllLoss"):
        if getattr(node, "_saved_weight", None) is not None:
            return None
        ignore = int(node._saved_ignore_index)
        if ignore >= 1 << 63:
            ignore -= _UINT64
        return kind, int((node._saved_target != ignore).sum())
    saved = getattr(node, "_saved_self", None)
    if isinstance(saved, torch.Tensor):
        return kind, saved.numel()
    return None


def is_batch_norm(node: Any) -> bool:
    return "BatchNorm" in node_name(node)
