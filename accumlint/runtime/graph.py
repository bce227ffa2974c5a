"""Walks over autograd graphs: how big, how old, and which nodes reduce the loss."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from accumlint.runtime import torch_private as tp

NODE_CAP = 20_000  # bound every walk; a graph this large is reported as "at least" this size
LOSS_WALK_CAP = 64


@dataclass
class GraphStats:
    nodes: int = 0
    min_seq: int | None = None
    max_seq: int | None = None
    old_nodes: int = 0  # nodes created before the watermark given to `walk`
    capped: bool = False
    ids: set[int] = field(default_factory=set)


def walk(root_node: Any, watermark: int | None = None, keep_ids: bool = False) -> GraphStats:
    """Depth-first over `next_functions`, skipping leaves' AccumulateGrad nodes: every backward
    shares them, so they say nothing about which graph a backward goes through."""
    stats = GraphStats()
    if root_node is None:
        return stats
    seen: set[int] = set()
    stack = [root_node]
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            continue
        seen.add(key)
        if tp.is_accumulate_grad(node):
            continue
        if keep_ids:
            stats.ids.add(key)
        stats.nodes += 1
        seq = tp.sequence_nr(node)
        if stats.min_seq is None or seq < stats.min_seq:
            stats.min_seq = seq
        if stats.max_seq is None or seq > stats.max_seq:
            stats.max_seq = seq
        if watermark is not None and seq < watermark:
            stats.old_nodes += 1
        if stats.nodes >= NODE_CAP:
            stats.capped = True
            break
        for child, _ in node.next_functions:
            if child is not None:
                stack.append(child)
    return stats


def loss_nodes(root_node: Any) -> list[Any]:
    """The first non-transparent nodes under a scalar root: the nodes that reduce each loss."""
    found: list[Any] = []
    seen: set[int] = set()
    stack = [root_node]
    steps = 0
    while stack and steps < LOSS_WALK_CAP:
        node = stack.pop()
        steps += 1
        if node is None or id(node) in seen or tp.is_accumulate_grad(node):
            continue
        seen.add(id(node))
        if tp.is_transparent(node):
            stack.extend(child for child, _ in node.next_functions if child is not None)
        else:
            found.append(node)
    return found


def walk_nodes(root_node: Any, cap: int) -> list[Any]:
    """Up to `cap` nodes of a graph, leaves' AccumulateGrad nodes left out."""
    found: list[Any] = []
    seen: set[int] = set()
    stack = [root_node]
    while stack and len(found) < cap:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if tp.is_accumulate_grad(node):
            continue
        found.append(node)
        stack.extend(child for child, _ in node.next_functions)
    return found
