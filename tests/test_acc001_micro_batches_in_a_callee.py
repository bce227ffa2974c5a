"""ACC001 where the window is split over two functions: the caller calls `forward_backward(batch)`
and steps after it, and that function cuts the batch into k micro-batches (`batch.chunk(k)`,
`range(k)`) and runs a backward on each. The undivided loss is reported in the callee, with k in
the callee's own terms, and the fix divides it there.
Clean twins: the loss divided by k, a sum-reduced loss, no step after the call (gradients read
for something else), a loop over the time steps of one sequence, and a callee that steps itself.
Forms: a script, a trainer class whose step method has no loop, and the callee in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of

SCRIPT = """
import torch
import torch.nn.functional as F


def forward_backward(model, batch, chunks):
    for micro in batch.chunk(chunks):
        loss = F.cross_entropy(model(micro), micro)LOSS
        BACKWARD


def train(model, optimizer, loader, chunks):
    for batch in loader:
        optimizer.zero_grad()
        forward_backward(model, batch, chunks)
        STEP
"""

TRAINER = """
import torch.nn.functional as F


class Pipeline:
    def __init__(self, model, optimizer, micro_batches):
        self.model = model
        self.optimizer = optimizer
        self.micro_batches = micro_batches

    def forward_backward(self, batch, loss_func=F.cross_entropy):
        for i in range(self.micro_batches):
            micro = batch[i::self.micro_batches]
            loss = loss_func(self.model(micro), micro)LOSS
            BACKWARD

    def train_step(self, batch):
        self.optimizer.zero_grad()
        self.forward_backward(batch)
        STEP
"""


def _script(loss: str = "", backward: str = "loss.backward()", step: str = "optimizer.step()") -> str:
    return textwrap.dedent(SCRIPT).replace("LOSS", loss).replace("BACKWARD", backward).replace("STEP", step)


def _trainer(loss: str = "", backward: str = "loss.backward()", step: str = "self.optimizer.step()") -> str:
    return textwrap.dedent(TRAINER).replace("LOSS", loss).replace("BACKWARD", backward).replace("STEP", step)


def _rows(source: str) -> list[int]:
    return [f.location.row for f in findings_of(source, "ACC001", path="train.py")]


def _row(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("make,k", [(_script, "chunks"), (_trainer, "self.micro_batches")])
def test_undivided_loss_in_the_callee_is_reported_and_divided_there(make, k: str) -> None:
    source = make()
    [finding] = findings_of(source, "ACC001", path="train.py")
    assert finding.location.row == _row(source, "loss.backward()")
    assert f"`{k}`" in finding.message and "forward_backward()" in finding.message
    fixed = fix_source(source, "train.py", select=("ACC001",)).fixed_source
    assert fixed is not None and f"(loss / {k}).backward()" in fixed
    compile(fixed, "train.py", "exec")
    assert fix_source(fixed, "train.py", select=("ACC001",)).fixed_source is None  # idempotent


@pytest.mark.parametrize("make", [_script, _trainer])
def test_divided_or_summed_losses_are_clean(make) -> None:
    k = "chunks" if make is _script else "self.micro_batches"
    assert _rows(make(backward=f"(loss / {k}).backward()")) == []
    summed = make().replace("micro)LOSS", 'micro, reduction="sum")').replace("micro)\n", 'micro, reduction="sum")\n')
    assert 'reduction="sum"' in summed
    assert _rows(summed) == []


@pytest.mark.parametrize("make,other", [
    (_script, "grads = [p.grad.clone() for p in model.parameters()]"),
    (_trainer, "self.norms.append(self.model.weight.grad.norm().item())"),
])
def test_no_step_after_the_call_is_clean(make, other: str) -> None:
    assert _rows(make(step=other)) == []


def test_time_steps_of_one_sequence_are_clean() -> None:
    source = textwrap.dedent("""
        def bptt(rnn, head, seq, hidden, steps):
            for t in range(steps):
                out, hidden = rnn(seq[t], hidden)
                loss = head(out).pow(2).mean()
                loss.backward(retain_graph=True)


        def train(rnn, head, optimizer, loader, hidden, steps):
            for seq in loader:
                optimizer.zero_grad()
                bptt(rnn, head, seq, hidden, steps)
                optimizer.step()
    """)
    assert _rows(source) == []


def test_a_callee_that_steps_itself_is_not_a_split_window() -> None:
    source = _script(backward="loss.backward()\n        optimizer.step()").replace(
        "def forward_backward(model, batch, chunks):", "def forward_backward(model, batch, chunks, optimizer=None):"
    )
    assert _rows(source) == []


def test_the_callee_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    helper = textwrap.dedent(SCRIPT.split("def train(")[0]).replace("LOSS", "")
    (tmp_path / "pipeline.py").write_text(helper.replace("BACKWARD", "loss.backward()"))
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent("""
        from pipeline import forward_backward


        def train(model, optimizer, loader, chunks):
            for batch in loader:
                optimizer.zero_grad()
                forward_backward(model, batch, chunks)
                optimizer.step()
    """))
    [finding] = findings_of(train.read_bytes(), "ACC001", path=str(train))
    assert finding.filename.endswith("pipeline.py") and "`chunks`" in finding.message
    (tmp_path / "pipeline.py").write_text(helper.replace("BACKWARD", "(loss / chunks).backward()"))
    assert findings_of(train.read_bytes(), "ACC001", path=str(train)) == []


def test_a_test_function_that_checks_the_window_is_clean() -> None:
    source = _script().replace("def train(model, optimizer, loader, chunks):", "def test_window(model, optimizer, loader, chunks):")
    source = source.replace("        optimizer.step()\n", "        optimizer.step()\n        assert model.weight.grad is not None\n")
    assert "assert model.weight" in source
    assert _rows(source) == []


def test_a_callee_that_zeroes_at_the_window_start() -> None:
    """`zero_grad()` before the micro-batch loop starts the window (OpenAI's diffusion trainers);
    a zeroing inside the loop keeps only the last micro-batch, which is not this form."""
    at_start = _script().replace(
        "    for micro in batch.chunk(chunks):", "    model.zero_grad()\n    for micro in batch.chunk(chunks):"
    )
    assert "model.zero_grad()\n    for micro" in at_start
    assert len(_rows(at_start)) == 1
    inside = _script().replace("        loss = F.cross_entropy", "        model.zero_grad()\n        loss = F.cross_entropy")
    assert "        model.zero_grad()\n        loss" in inside
    assert _rows(inside) == []
