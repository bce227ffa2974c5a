"""ACC006 on a backward with `retain_graph=True` inside a function the loop calls
(`optimizer.grad_norm(loss)` that runs `loss.backward(retain_graph=True)` to measure the
gradients' norm). Only the caller's loop can tell whether the graph is used again: reported at
the call when the loop runs a fresh forward before its next backward (the kept graph is never
reused, and its activations stay alive beside the new ones); silent when the same loss is handed
to the next backward (the helper's documented use), when what a later called backward
differentiates cannot be read, or when the helper itself may reuse the graph. Forms: a script
with a module function, a trainer with a project optimizer class, and that class in another
module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

OPTIMIZER = """
import torch


class LossScaler:
    def __init__(self, scale):
        self.scale = scale


class NormClippingSGD:
    def __init__(self, model, lr, max_norm, fp16=False):
        self.model = model
        self.lr = lr
        self.max_norm = max_norm
        self.scaler = LossScaler(2.0 ** 16) if fp16 else None
        self.coef = None

    def grad_norm(self, loss):
        if self.scaler is not None:
            loss = loss * self.scaler.scale
        loss.backward(retain_graph=True)
        norms = [p.grad.norm() for p in self.model.parameters() if p.grad is not None]
        self.coef = self.max_norm / (torch.stack(norms).norm() + 1e-6)
        for p in self.model.parameters():
            p.grad = None

    def fused_backward(self, loss):
        loss.backward()
        with torch.no_grad():
            for p in self.model.parameters():
                p.add_(p.grad, alpha=-self.lr * float(self.coef.clamp(max=1.0)))
                p.grad = None
"""

TRAINER = """

class Trainer:
    def __init__(self, model, loader):
        self.model = model
        self.loader = loader
        self.optimizer = NormClippingSGD(model, 0.1, 1.0)

    def train(self):
        for epoch in range(3):
            for batch in self.loader:
                outs = self.model(batch["x"])
                loss = (outs.logits - batch["y"]).pow(2).mean()
                self.optimizer.grad_norm(loss)
                AFTER
                self.optimizer.fused_backward(loss)
"""

REFORWARD = """outs = self.model(batch["x"])
loss = (outs.logits - batch["y"]).pow(2).mean()"""

SCRIPT = """
import torch


def grad_norm(model, loss):
    loss.backward(retain_graph=True)
    return torch.stack([p.grad.norm() for p in model.parameters()]).norm()


def train(model, loader, optimizer):
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        norm = grad_norm(model, loss)
        optimizer.zero_grad()
        AFTER
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
"""

SCRIPT_REFORWARD = "loss = (model(x) - y).pow(2).mean()"


def _acc006(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC006", path=path)


def _trainer(after: str) -> str:
    body = textwrap.dedent(TRAINER).replace("AFTER", after.replace("\n", "\n                "))
    return textwrap.dedent(OPTIMIZER) + body


def _script(after: str) -> str:
    return textwrap.dedent(SCRIPT).replace("AFTER", after.replace("\n", "\n        "))


def test_trainer_that_reforwards_is_reported_at_the_call() -> None:
    source = _trainer(REFORWARD)
    found = _acc006(source)
    assert len(found) == 1
    call_line = next(n for n, line in enumerate(source.splitlines(), 1) if "self.optimizer.grad_norm(loss)" in line)
    assert found[0].location.row == call_line
    assert "`grad_norm()`" in found[0].message and "on the `loss` handed in here" in found[0].message
    assert "no later backward in the iteration goes through it" in found[0].message
    assert found[0].fix is None  # the helper serves other callers: nothing to remove here


def test_script_that_reforwards_is_reported() -> None:
    found = _acc006(_script(SCRIPT_REFORWARD))
    assert len(found) == 1
    assert "`grad_norm()`" in found[0].message


@pytest.mark.parametrize("build", [_trainer, _script])
def test_same_loss_handed_to_the_next_backward_is_clean(build) -> None:
    assert _acc006(build("pass")) == []


def test_later_backward_of_an_unreadable_tensor_is_clean() -> None:
    source = _trainer(REFORWARD).replace("self.optimizer.fused_backward(loss)", "self.optimizer.fused_backward(*[loss])")
    assert _acc006(source) == []


def test_helper_that_differentiates_an_attribute_is_clean() -> None:
    source = _trainer(REFORWARD).replace("loss.backward(retain_graph=True)", "self.last_loss.backward(retain_graph=True)")
    assert _acc006(source) == []


def test_helper_that_reuses_the_graph_itself_is_clean() -> None:
    source = _trainer(REFORWARD).replace(
        "        norms = [p.grad.norm()",
        "        extra = torch.autograd.grad(loss, list(self.model.parameters()))\n        norms = [p.grad.norm()",
    )
    assert _acc006(source) == []


def test_helper_scaling_by_a_graph_carrying_attribute_is_clean() -> None:
    source = _trainer(REFORWARD).replace("loss = loss * self.scaler.scale", "loss = loss * self.scaler")
    source = source.replace("LossScaler(2.0 ** 16) if fp16 else None", "model(torch.ones(1))")
    assert _acc006(source) == []


@pytest.mark.parametrize("after,found", [(REFORWARD, 1), ("pass", 0)])
def test_optimizer_in_another_module(tmp_path: Path, after: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "optim.py").write_text(textwrap.dedent(OPTIMIZER))
    train = tmp_path / "trainer.py"
    body = textwrap.dedent(TRAINER).replace("AFTER", after.replace("\n", "\n                "))
    train.write_text("from optim import NormClippingSGD\n" + body)
    findings = _acc006(train.read_text(), str(train))
    assert len(findings) == found
    if found:
        assert "(optim.py:" in findings[0].message


DIRECT_THEN_CALLED = """
import torch


class Trainer:
    def __init__(self, model, loader, optimizer):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer

    def backward_aux(self):
        self.aux_loss.backward()

    def train(self):
        for x, y in self.loader:
            out = self.model(x)
            self.aux_loss = out.pow(2).mean()
            loss = (out - y).pow(2).mean()
            loss.backward(retain_graph=True)
            CALL
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("call,found", [("self.backward_aux()", 0), ("pass", 1)])
def test_direct_backward_then_a_called_one_of_an_unreadable_tensor(call: str, found: int) -> None:
    # The called backward differentiates `self.aux_loss`, set from the same forward: it may run
    # through the kept graph, so the rule stays silent; without it, nothing reuses the graph.
    assert len(_acc006(textwrap.dedent(DIRECT_THEN_CALLED).replace("CALL", call))) == found
