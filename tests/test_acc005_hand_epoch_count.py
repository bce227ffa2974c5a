"""ACC005 on a count of the epoch's batches kept by hand (`n_iter += 1` every micro-step,
`n_iter = 0` with each epoch, the step gated on `n_iter % k == 0`) over a plain `for batch in
loader:`. It restarts with each epoch as `enumerate` does, so the last len % k batches are left
over. Forms: a script, a trainer whose step is spread over methods (the loop calls `step()`, which
calls `optimize()`, which raises the count through `iter()`; `end_epoch()` resets it), and a
script whose backward runs in another module. Twins: an end-of-data clause, a count that runs
on across epochs, a step or a zeroing after the loop, a count raised only in the step block."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
def train(model, loader, optimizer, k, epochs):
    n_iter = 0
    for epoch in range(epochs):
        RESET
        for batch in loader:
            loss = model(batch) / k
            loss.backward()
            RAISE
            if GATE:
                optimizer.step()
                optimizer.zero_grad()
        AFTER
"""

TRAINER = """
class Distiller:
    def __init__(self, model, loader, optimizer, params):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.params = params
        self.n_iter = 0
        self.n_total_iter = 0

    def train(self):
        for _ in range(self.params.n_epoch):
            for batch in self.loader:
                self.step(batch)
            self.end_epoch()

    def step(self, batch):
        loss = self.model(batch).mean()
        self.optimize(loss)

    def optimize(self, loss):
        loss = loss / self.params.gradient_accumulation_steps
        loss.backward()
        self.iter()
        if self.n_iter % self.params.gradient_accumulation_steps == 0:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def iter(self):
        self.n_iter += 1
        self.n_total_iter += 1

    def end_epoch(self):
        END
"""

HELPERS = """
def backward_step(model, batch, k):
    loss = model(batch) / k
    loss.backward()
"""

MAIN = """
from helpers import backward_step


def train(model, loader, optimizer, k, epochs):
    OUTSIDE
    for epoch in range(epochs):
        INSIDE
        for batch in loader:
            backward_step(model, batch, k)
            seen += 1
            if seen % k == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def _acc005(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC005", path=path)


def _script(reset: str = "n_iter = 0", raise_: str = "n_iter += 1", gate: str = "n_iter % k == 0", after: str = "pass") -> str:
    text = textwrap.dedent(SCRIPT)
    return text.replace("RESET", reset).replace("RAISE", raise_).replace("GATE", gate).replace("AFTER", after)


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("reset,after", [
    ("n_iter = 0", "pass"),  # the count restarts before each epoch's loop
    ("pass", "n_iter = 0"),  # or after it
])
def test_script_count_restarted_each_epoch(reset: str, after: str) -> None:
    source = _script(reset=reset, after=after)
    found = _acc005(source)
    assert len(found) == 1
    assert found[0].location.row == _row(source, "if n_iter % k == 0")
    assert "starts again from 0 with each epoch" in found[0].message
    assert "added to the next epoch's first window" in found[0].message
    assert found[0].fix is None  # the loader's length is the code's to name


def test_script_count_raised_after_the_gate_is_counted_from_zero() -> None:
    text = textwrap.dedent(SCRIPT).replace("            RAISE\n", "")
    source = text.replace("RESET", "n_iter = 0").replace("GATE", "n_iter % k == 0").replace(
        "                optimizer.zero_grad()\n", "                optimizer.zero_grad()\n            n_iter += 1\n"
    ).replace("AFTER", "pass")
    found = _acc005(source)
    assert len(found) == 1
    assert "counted from 0" in found[0].message


@pytest.mark.parametrize("kwargs", [
    {"gate": "n_iter % k == 0 or n_iter == len(loader)"},  # an end-of-data clause
    {"reset": "pass"},  # one count across the epochs: windows run on into the next epoch
    {"after": "optimizer.step()"},  # the tail is stepped after the loop
    {"after": "optimizer.zero_grad()"},  # the tail is dropped on purpose
    {"raise_": "if n_iter > 0:\n                n_iter += 1"},  # not raised on every micro-step
    {"reset": "pass", "after": "if epoch % 2:\n            n_iter = 0"},  # not reset with every epoch
])
def test_script_clean_twins(kwargs: dict) -> None:
    assert _acc005(_script(**kwargs)) == []


def test_trainer_count_over_methods_is_reported() -> None:
    source = textwrap.dedent(TRAINER).replace("END", "self.n_iter = 0")
    found = _acc005(source)
    assert len(found) == 1
    assert found[0].location.row == _row(source, "if self.n_iter % self.params")
    assert "`self.optimizer.step()`" in found[0].message


@pytest.mark.parametrize("end", [
    "pass",  # the count runs on across epochs
    "self.optimizer.step()\n        self.optimizer.zero_grad()\n        self.n_iter = 0",  # the tail is stepped
    "self.optimizer.zero_grad()\n        self.n_iter = 0",  # the tail is dropped on purpose
])
def test_trainer_clean_twins(end: str) -> None:
    assert _acc005(textwrap.dedent(TRAINER).replace("END", end)) == []


def test_trainer_count_set_where_the_loop_does_not_show_is_silent() -> None:
    source = textwrap.dedent(TRAINER).replace("END", "self.n_iter = 0") + "\n    def rewind(self):\n        self.n_iter = 0\n"
    assert _acc005(source) == []


@pytest.mark.parametrize("outside,inside,found", [
    ("pass", "seen = 0", 1),  # counted afresh each epoch
    ("seen = 0", "pass", 0),  # one count across the epochs
])
def test_backward_in_another_module(tmp_path: Path, outside: str, inside: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPERS))
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(MAIN).replace("OUTSIDE", outside).replace("INSIDE", inside))
    assert len(_acc005(train.read_text(), str(train))) == found
