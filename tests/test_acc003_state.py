"""ACC003 recurrent-state-not-detached: what is carried model state and what is not.

Positive and negative cases in script, trainer-class and multi-module form: modules re-built inside
the loop, numpy schedules, comprehension-bound names, `.data`/`detach()`/`Variable(x.data)` and local
helpers returning `x.data...`, `topk`/`max` indices, values built only from detached tensors and data,
a thrown-away `h.detach()`, state on `self` across calls of a step method, and an inner loop over the
time steps of one batch. Every fix compiles, removes its finding, is idempotent and only inserts lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import fix_source
from rule_cases import RuleCases, src

SELECT = {"ACC003"}

CASES = RuleCases("ACC003")
_src = src
found, marked, assert_clean = CASES.found, CASES.marked, CASES.assert_clean
assert_reported = CASES.assert_reported


def assert_fix(source: str, inserted: list[str], filename: str = "case.py", unsafe: bool = False) -> str:
    once = fix_source(source, filename, select=SELECT, unsafe_fixes=unsafe)
    assert once.error is None, once.error
    fixed = once.fixed_source
    assert fixed is not None, "no fix applied"
    compile(fixed, filename, "exec")
    assert once.findings == [] and found(fixed, filename) == []
    twice = fix_source(fixed, filename, select=SELECT, unsafe_fixes=unsafe)
    assert twice.error is None and twice.fixed_source is None
    old, new = source.splitlines(), fixed.splitlines()
    added = [line for line in new if line not in old]
    assert [line.strip() for line in added] == inserted
    assert [line for line in new if line in old] == old
    return fixed


# --- script form -------------------------------------------------------------------------------------

CARRIED = _src("""
    import torch
    from torch import nn

    rnn = nn.GRU(8, 16)
    hidden = torch.zeros(1, 4, 16)
    for x, y in loader:
        out, hidden = rnn(x, hidden)  # <ACC003
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""")


def test_hidden_state_carried_is_reported_with_a_safe_fix():
    findings = assert_reported(CARRIED)
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"
    fixed = assert_fix(CARRIED, ["hidden = hidden.detach()"])
    assert "    loss.backward()\n    hidden = hidden.detach()\n" in fixed


def test_thrown_away_detach_statement_detaches_nothing():
    source = CARRIED.replace("    optimizer.zero_grad()\n", "    optimizer.zero_grad()\n    hidden.detach()\n")
    assert_reported(source)


@pytest.mark.parametrize("after", [
    "hidden = hidden.data",
    "hidden = hidden.detach()",
    "hidden.detach_()",
    "hidden = Variable(hidden.data)",
    "hidden = torch.cat([hidden.detach(), x[-1:]], 0)",
    "hidden = torch.zeros_like(hidden)",
])
def test_state_detached_or_rebuilt_from_data_is_clean(after):
    source = CARRIED.replace("  # <ACC003", "").replace(
        "    optimizer.zero_grad()\n", f"    optimizer.zero_grad()\n    {after}\n"
    )
    assert_clean("from torch.autograd import Variable\n" + source)


def test_local_helper_returning_data_is_a_detach():
    source = _src("""
        def repack(h):
            return h.data.clone()

        hidden = init_hidden()
        for x, y in loader:
            out, hidden = model(x, hidden)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            hidden = repack(hidden)
    """)
    assert_clean(source)


def test_local_helper_returning_its_argument_is_no_detach():
    source = _src("""
        def passthrough(h):
            return h * 1

        hidden = init_hidden()
        for x, y in loader:
            out, hidden = model(x, hidden)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            hidden = passthrough(hidden)  # <ACC003
    """)
    assert_reported(source)


@pytest.mark.parametrize("feedback", ["out.topk(1)[1]", "out.max(1)[1]", "out.argmax(1)", "y[t]", "out.data.topk(1)[1]"])
def test_fed_back_indices_or_targets_carry_no_graph(feedback):
    assert_clean(_src(f"""
        inp = start
        for t in range(steps):
            out = model(inp)
            loss = criterion(out, y[t])
            loss.backward()
            optimizer.step()
            inp = {feedback}
    """))


def test_fed_back_output_is_reported():
    source = _src("""
        inp = start
        for t in range(steps):
            out = model(inp)
            loss = criterion(out, y[t])
            loss.backward()
            optimizer.step()
            inp = out.softmax(-1)  # <ACC003
    """)
    assert_reported(source)
    assert_fix(source, ["inp = inp.detach()"], unsafe=True)


def test_module_rebuilt_and_numpy_schedule_are_not_state():
    assert_clean(_src("""
        import numpy as np
        import torch
        scale = 1.0
        for round_ in range(rounds):
            model = Net()
            model.load_state_dict(torch.load(path))
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x, scale), y)
                loss.backward()
                optimizer.step()
                scale = np.cos(step / total) * 0.5
    """))


def test_comprehension_bound_name_shadowing_an_outer_one_is_not_state():
    assert_clean(_src("""
        out = None
        for x, y in loader:
            preds = [model(out) for out in x.split(4)]
            loss = sum(criterion(p, y) for p in preds)
            loss.backward()
            optimizer.step()
    """))


def test_inner_loop_over_time_steps_is_a_sequence_loop():
    assert_clean(_src("""
        for x, y in loader:
            h = model.init_hidden(x.size(1))
            loss = 0
            for t in range(x.size(0)):
                out, h = model(x[t], h)
                loss = loss + criterion(out, y[t])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """))


# --- trainer-class form: state on self across calls of a step method --------------------------------

TRAINER = _src("""
    class Trainer:
        def __init__(self, model, optimizer, criterion):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion
            self.hidden = None

        def train_step(self, x, y):
            out, self.hidden = self.model(x, self.hidden)  # <ACC003
            loss = self.criterion(out, y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
""")


def test_state_on_self_across_step_calls_is_reported():
    findings = assert_reported(TRAINER)
    assert "next call of `train_step`" in findings[0].message
    fixed = assert_fix(TRAINER, ["self.hidden = self.hidden.detach()"], unsafe=True)
    assert "        loss.backward()\n        self.hidden = self.hidden.detach()\n" in fixed


@pytest.mark.parametrize("old, new", [
    ("        loss.backward()\n", "        loss.backward()\n        self.hidden = self.hidden.detach()\n"),
    ("            out, self.hidden = self.model(x, self.hidden)  # <ACC003\n".replace("    ", "", 1),
     "        self.hidden = None\n        out, self.hidden = self.model(x, self.hidden)\n"),
])
def test_state_on_self_detached_or_reset_each_call_is_clean(old, new):
    assert old in TRAINER
    assert_clean(TRAINER.replace(old, new).replace("  # <ACC003", ""))


def test_local_state_in_a_method_does_not_outlive_the_call():
    assert_clean(_src("""
        class Trainer:
            def train_step(self, x, y):
                hidden = self.model.init_hidden()
                out, hidden = self.model(x, hidden)
                loss = self.criterion(out, y)
                loss.backward()
                self.optimizer.step()
    """))


def test_state_on_self_without_backward_in_the_method_is_clean():
    assert_clean(_src("""
        class Generator:
            def sample(self, x):
                out, self.hidden = self.model(x, self.hidden)
                return out
    """))


def test_trainer_loop_over_batches_carrying_a_local_state():
    source = _src("""
        class Trainer:
            def fit(self, loader):
                hidden = self.model.init_hidden()
                for x, y in loader:
                    out, hidden = self.model(x, hidden)  # <ACC003
                    loss = self.criterion(out, y)
                    loss.backward()
                    self.optimizer.step()
    """)
    assert_reported(source)
    assert_fix(source, ["hidden = hidden.detach()"], unsafe=True)


# --- multi-module form -------------------------------------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_src(text))


def test_helper_in_another_module_returning_data_is_a_detach(tmp_path):
    _write(tmp_path, {
        "utils.py": """
            def repackage(h):
                return h.data
            def keep(h):
                return h + 0
        """,
        "train.py": """
            from utils import repackage, keep

            hidden = init_hidden()
            for x, y in loader:
                out, hidden = model(x, hidden)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                hidden = repackage(hidden)
        """,
    })
    path = tmp_path / "train.py"
    assert found(path.read_text(), str(path)) == []
    path.write_text(path.read_text().replace("hidden = repackage(hidden)", "hidden = keep(hidden)"))
    assert [f.location.row for f in found(path.read_text(), str(path))] == [9]


def test_trainer_state_with_a_base_class_in_another_module(tmp_path):
    _write(tmp_path, {
        "base.py": """
            class BaseTrainer:
                def __init__(self, model):
                    self.model = model
                    self.state = None
        """,
        "trainer.py": """
            from base import BaseTrainer

            class Trainer(BaseTrainer):
                def step(self, x, y):
                    out, self.state = self.model(x, self.state)
                    loss = self.criterion(out, y)
                    loss.backward()
                    self.optimizer.step()
        """,
    })
    path = tmp_path / "trainer.py"
    findings = found(path.read_text(), str(path))
    assert [f.location.row for f in findings] == [5]
    fixed = fix_source(path.read_text(), str(path), select=SELECT, unsafe_fixes=True).fixed_source
    assert fixed is not None and "        loss.backward()\n        self.state = self.state.detach()\n" in fixed
    compile(fixed, "trainer.py", "exec")


def test_schedule_recomputed_by_helpers_of_their_arguments_is_not_state():
    # diffusers' consistency training: weights recomputed from a numpy schedule through helpers.
    assert_clean(_src("""
        import numpy as np
        import torch

        def sigmas_for(n, rho):
            ramp = np.linspace(0, 1, n)
            return torch.from_numpy(ramp ** rho)

        def weights_for(levels):
            return torch.special.erf(torch.log(levels[1:])) - torch.special.erf(torch.log(levels[:-1]))

        def recalc(n):
            levels = sigmas_for(n, 7.0)
            return levels, weights_for(levels)

        levels, weights = recalc(10)
        for step, batch in enumerate(loader):
            idx = torch.multinomial(weights, 4)
            loss = model(batch, levels[idx]).mean()
            loss.backward()
            optimizer.step()
            levels, weights = recalc(10 + step)
    """))
