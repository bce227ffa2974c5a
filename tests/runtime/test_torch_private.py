"""Pins every private torch detail accumlint/runtime/torch_private.py relies on."""

import torch
import torch.nn.functional as F

from accumlint.runtime import graph, torch_private as tp


def _loss(**kwargs):
    w = torch.randn(3, 4, requires_grad=True)
    return F.cross_entropy(torch.randn(5, 3) @ w, torch.tensor([0, 1, 2, 3, -100]), **kwargs)


def test_node_names_and_transparent_walk():
    loss = _loss()
    assert tp.node_name(loss.grad_fn) == "NllLossBackward0"
    scaled = loss / 4 * 2.0 + 0.0
    (node,) = graph.loss_nodes(scaled.grad_fn)
    assert node is loss.grad_fn
    assert tp.is_transparent((loss / 4).grad_fn)  # DivBackward0 in 2.13, not DivBackward1


def test_sequence_numbers_order_creation():
    first = (torch.randn(2, requires_grad=True) * 2).grad_fn
    now = tp.current_sequence_nr()
    second = (torch.randn(2, requires_grad=True) * 2).grad_fn
    assert tp.sequence_nr(first) < now <= tp.sequence_nr(second)


def test_accumulate_grad_is_recognised():
    w = torch.randn(2, requires_grad=True)
    child = (w * 2).grad_fn.next_functions[0][0]
    assert tp.is_accumulate_grad(child)


def test_loss_counts():
    assert tp.loss_count(_loss().grad_fn) == (1, True)
    count, exact = tp.loss_count(_loss(reduction="sum").grad_fn)
    assert exact and int(count) == 4  # -100 is ignored; saved as an unsigned 64-bit value
    assert tp.loss_count(torch.randn(3, requires_grad=True).sum().grad_fn)[1] is False
    assert tp.loss_count(torch.randn(3, requires_grad=True).mean().grad_fn) == (1, True)


def test_saved_bytes_reads_saved_tensors_and_freed_graphs():
    x = torch.randn(256, requires_grad=True)
    y = x.exp().sum()  # exp saves its 1 KiB result
    assert tp.saved_bytes(y.grad_fn) >= 1024
    y.backward()
    assert tp.saved_bytes(y.grad_fn) == 0


def test_dataloader_iterator_base_and_scheduler_classes():
    cls = tp.dataloader_iter_class()
    it = iter(torch.utils.data.DataLoader(list(range(4)), batch_size=2))
    assert isinstance(it, cls) and "__next__" in cls.__dict__
    names = {c.__name__ for c in tp.scheduler_classes()}
    assert {"LRScheduler", "ReduceLROnPlateau", "SequentialLR"} <= names


def test_public_hook_apis_used():
    from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: F401
    p = torch.randn(2, requires_grad=True)
    seen = []
    handle = p.register_post_accumulate_grad_hook(lambda t: seen.append(t))
    (p * 2).sum().backward()
    handle.remove()
    assert seen == [p]
