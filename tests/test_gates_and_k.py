"""Windows as real code spells them: a micro-step counter reset at the step, and k held on
`self` (set in `__init__` from arguments or a config object)."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine
from tests.snippets import findings_of


def found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, dedent=True)}


COUNTER = """
def train(model, opt, loader, k):
    micro = 0
    for batch in loader:
        loss = model(batch).mean(){divide}
        loss.backward()
        {zero_early}
        micro += 1
        if micro {op} k:
            opt.step()
            {zero_late}
            micro = 0
"""


@pytest.mark.parametrize("op", ["==", ">="])
def test_a_counter_reset_at_the_step_is_a_window(op):
    buggy = COUNTER.format(divide="", zero_early="opt.zero_grad()", zero_late="pass", op=op)
    # the count starts at 0 in this pass over the data: its last len % k batches never reach the step
    assert found(buggy) == {("ACC001", 6), ("ACC007", 7), ("ACC005", 9)}
    right = COUNTER.format(divide=" / k", zero_early="pass", zero_late="opt.zero_grad()", op=op)
    assert found(right) == {("ACC005", 9)}
    flushed = right + "    if micro > 0:\n        opt.step()\n        opt.zero_grad()\n"
    assert found(flushed) == set()


def test_a_counter_never_reset_is_no_window():
    # `micro == k` fires once: whatever this is, it is not a window of k micro-steps.
    source = COUNTER.format(divide="", zero_early="opt.zero_grad()", zero_late="pass", op="==")
    assert found(source.replace("            micro = 0\n", "")) == set()


def test_a_counter_compared_with_one_is_no_window():
    source = COUNTER.format(divide="", zero_early="opt.zero_grad()", zero_late="pass", op="==")
    assert found(source.replace("if micro == k:", "if micro == 1:")) == set()


def test_the_counter_gate_fix_divides_by_its_k():
    source = textwrap.dedent(COUNTER.format(divide="", zero_early="pass", zero_late="opt.zero_grad()", op="=="))
    fixed = engine.fix_source(source, "t.py").fixed_source
    assert "(loss / k).backward()" in fixed


TRAINER = """
class Trainer:
    def __init__(self, model, opt, cfg):
        self.model, self.opt = model, opt
        self.accum = {k_value}

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean(){divide}
            loss.backward()
            if (i + 1) % self.accum == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


def test_k_on_self_is_followed_to_its_source_in_init():
    twice = TRAINER.format(k_value="cfg.grad_accum", divide=" / cfg.grad_accum / self.accum")
    assert found(twice) == {("ACC010", 10)}
    once = TRAINER.format(k_value="cfg.grad_accum", divide=" / cfg.grad_accum")
    assert found(once) == set()
    never = TRAINER.format(k_value="cfg.grad_accum", divide="")
    assert found(never) == {("ACC001", 10)}


def test_k_set_to_one_on_self_is_no_window():
    assert found(TRAINER.format(k_value="1", divide="")) == set()


def test_k_unpacked_in_init_is_followed_too():
    source = TRAINER.format(k_value="cfg.grad_accum", divide=" / k_from_args / self.accum").replace(
        "self.accum = cfg.grad_accum", "self.accum, self.lr = k_from_args, cfg.lr"
    )
    assert found(source) == {("ACC010", 10)}


HELPER_GATE = """
def is_update_step(step, every):
    return (step + 1) % every == 0


class Trainer:
    def _boundary(self, i):
        return (i + 1) % self.k == 0

    def train(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean(){divide_self}
            loss.backward()
            if self._boundary(i){end}:
                self.opt.step()
                self.opt.zero_grad()


def train(model, opt, loader, accum):
    for i, batch in enumerate(loader):
        loss = model(batch).mean(){divide}
        loss.backward()
        do_step = is_update_step(i, every=accum){end}
        if do_step:
            opt.step()
            opt.zero_grad()
"""


def test_a_gate_computed_by_a_helper_is_read_at_the_call_site():
    end = " or i + 1 == len(loader)"
    buggy = HELPER_GATE.format(divide_self="", divide="", end=end)
    assert found(buggy) == {("ACC001", 13), ("ACC001", 22)}
    fixed = engine.fix_source(textwrap.dedent(buggy), "t.py").fixed_source
    # k is written as the call site knows it: the argument, not the helper's parameter name
    assert "(loss / self.k).backward()" in fixed and "(loss / accum).backward()" in fixed
    assert "every" not in fixed.split("def train(model")[1].split("do_step")[0]
    assert found(HELPER_GATE.format(divide_self=" / self.k", divide=" / accum", end=end)) == set()


def test_a_helper_gate_without_an_end_clause_drops_the_partial_window():
    source = HELPER_GATE.format(divide_self=" / self.k", divide=" / accum", end="")
    assert {code for code, _ in found(source)} == {"ACC005"}


def test_a_helper_that_returns_something_else_is_no_gate():
    source = HELPER_GATE.format(divide_self="", divide="", end="").replace(
        "return (step + 1) % every == 0", "return step > every"
    ).replace("return (i + 1) % self.k == 0", "return bool(i)")
    assert found(source) == set()


SEQUENCE = """
def train(model, opt, loader, seq_len):
    for x, y in loader:
        h = model.init_hidden()
        for t in range(seq_len):
            out, h = model.rnn(x[t], {state})
            loss = crit(out, y[t])
            loss.backward(retain_graph=True)
        opt.step()
        opt.zero_grad()
"""


def test_an_inner_loop_over_time_steps_is_no_window():
    # The state fed back each time step makes it one sequence, not seq_len micro-batches.
    assert ("ACC001", 8) not in found(SEQUENCE.format(state="h"))
    # Without a fed-back state the same shape is nanoGPT's micro-step loop.
    assert ("ACC001", 8) in found(SEQUENCE.format(state="None"))


LIGHTNING_MANUAL = """
import lightning as L


class Model(L.LightningModule):
    def __init__(self, k):
        super().__init__()
        self.automatic_optimization = False
        self.k = k

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self.model(batch).mean() / self.k
        self.manual_backward(loss)
        if {gate}:
            opt.step()
            opt.zero_grad()
"""


def test_lightning_manual_optimisation_needs_the_last_batch_clause():
    result = engine.check_source(textwrap.dedent(LIGHTNING_MANUAL.format(gate="(batch_idx + 1) % self.k == 0")), "t.py")
    (finding,) = result.findings
    assert (finding.code, finding.location.row) == ("ACC005", 15)
    assert "or self.trainer.is_last_batch" in finding.message and finding.fix is None
    flushed = LIGHTNING_MANUAL.format(gate="(batch_idx + 1) % self.k == 0 or self.trainer.is_last_batch")
    assert found(flushed) == set()
