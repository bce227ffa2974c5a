"""A backward dedented out of its micro-batch loop: only the last micro-batch's loss reaches
backward, so the step runs on that micro-batch's gradient alone (ACC007's consequence: only the last
micro-batch's gradient reaches optimizer.step()). Reported at the backward, without a fix."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine
from tests.snippets import findings_of


def found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(textwrap.dedent(source).lstrip())}


CHUNKS = """
def train(model, opt, crit, loader, k):
    for x, y in loader:
        opt.zero_grad()
        for xm, ym in zip(x.chunk(k), y.chunk(k)):
            loss = crit(model(xm), ym) / k
        {backward}
        opt.step()
"""


def test_a_backward_after_the_micro_batch_loop_is_reported():
    result = engine.check_source(textwrap.dedent(CHUNKS.format(backward="loss.backward()")).lstrip(), "t.py")
    assert [(f.code, f.location.row) for f in result.findings] == [("ACC007", 6)]
    finding = result.findings[0]
    assert "after the micro-batch loop (line 4)" in finding.message and finding.fix is None


def test_the_backward_inside_the_micro_batch_loop_is_clean():
    source = CHUNKS.format(backward="").replace("/ k\n", "/ k\n            loss.backward()\n")
    assert found(source) == set()


NANOGPT = """
def train(model, opt, get_batch, max_iters, k):
    for it in range(max_iters):
        for micro_step in range(k):
            X, Y = get_batch("train")
            logits, loss = model(X, Y)
            loss = loss / k
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
"""


def test_nanogpt_with_its_backward_dedented():
    assert found(NANOGPT) == {("ACC007", 7)}
    indented = NANOGPT.replace("        loss.backward()\n", "            loss.backward()\n")
    assert found(indented) == set()


@pytest.mark.parametrize(
    "inner",
    [
        # a sum over the micro-batches, backward-ed once: intended
        "loss = 0\n        for xm, ym in zip(x.chunk(k), y.chunk(k)):\n            loss = loss + crit(model(xm), ym) / k",
        "loss = 0\n        for xm, ym in zip(x.chunk(k), y.chunk(k)):\n            loss += crit(model(xm), ym) / k",
        # the time steps of one sequence carrying a hidden state: a sequence loop
        "h = None\n        for t in range(x.size(1)):\n            out, h = model(x[:, t], h)\n            loss = crit(out, y[:, t])",
        # retries until a finite loss: the loop stops at the one it keeps
        "for attempt in range(3):\n            loss = crit(model(x), y)\n            if loss.isfinite():\n                break",
        # the same value every time: nothing per micro-batch is thrown away
        "for _ in range(k):\n            loss = crit(model(x), y)",
    ],
)
def test_loops_that_are_not_micro_batches_thrown_away(inner):
    source = f"""
def train(model, opt, crit, loader, k):
    for x, y in loader:
        opt.zero_grad()
        {inner}
        loss.backward()
        opt.step()
"""
    assert found(source) == set()


def test_no_step_after_it_is_no_training_loop():
    assert found(CHUNKS.format(backward="loss.backward()").replace("        opt.step()\n", "")) == set()


FETCHED_INSIDE = """
def train(model, opt, loader, k, num_batches):
    for i in range(num_batches):
        for _ in range(k):
            loss, parts = model(next(loader), return_loss_breakdown=True)
        if k is not None:
            (loss / k).backward()
        opt.step()
        opt.zero_grad()
"""

TRAINER_FETCHED_INSIDE = """
class Trainer:
    def fit(self, num_batches):
        for i in range(num_batches):
            for _ in range(self.k):
                loss = self.model(next(self.loader)).mean()
            (loss / self.k).backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def test_data_fetched_inside_the_call_that_uses_it_makes_micro_batches():
    # `model(next(loader))`: fresh data on every pass, though no name holds it; the backward sits
    # after the loop (here also under an `if`)
    assert found(FETCHED_INSIDE) == {("ACC007", 6)}
    assert found(TRAINER_FETCHED_INSIDE) == {("ACC007", 6)}


def test_data_fetched_inside_with_the_backward_in_the_loop_is_clean():
    indented = FETCHED_INSIDE.replace("        if k is not None:\n            (loss / k).backward()\n", "")
    indented = indented.replace("return_loss_breakdown=True)\n", "return_loss_breakdown=True)\n            (loss / k).backward()\n")
    assert found(indented) == set()
