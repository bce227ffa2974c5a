"""ACC002 stays silent on a loop whose iterations are whole trainings: each pass calls a function
that runs its own training loop (backward and step on every batch) and keeps what that run
returns (one result per fold, task or dataset). What it keeps per run does not grow with the
steps. The twin, a loop that calls a one-batch step function and keeps the loss it returns,
is still reported. Forms: a script, a trainer class, and the training function in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

RUN = """
def train_run(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return {"loss": loss, "last": model(x, y)}
"""

STEP = """
def train_run(model, batch, optimizer):
    x, y = batch
    loss = model(x, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return {"loss": loss, "last": model(x, y)}
"""

SCRIPT = """
def main(model, loaders, optimizer):
    results = {}
    for name in loaders:
        out = train_run(model, loaders[name], optimizer)
        results[name] = out
    print(results)
"""

TRAINER = """
class Runner:
    def __init__(self, model, loaders, optimizer):
        self.model = model
        self.loaders = loaders
        self.optimizer = optimizer

    def train_run(self, loader):
        for x, y in loader:
            loss = self.model(x, y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
        return {"loss": loss}

    def run_all(self):
        results = []
        for task, loader in enumerate(self.loaders):
            out = self.train_run(loader)
            results.append(out)
        print(results)
"""


def _acc002(source: str) -> list:
    return [f for f in check_source(source.encode(), "train.py").findings if f.code == "ACC002"]


def test_a_loop_of_training_runs_is_clean() -> None:
    assert _acc002(RUN + SCRIPT) == []


def test_a_trainer_running_one_training_per_task_is_clean() -> None:
    assert _acc002(TRAINER) == []


def test_the_training_run_in_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "runs.py").write_text(RUN)
    main = "from runs import train_run\n" + SCRIPT
    (tmp_path / "train.py").write_text(main)
    monkeypatch.chdir(tmp_path)
    assert findings_of(main.encode(), "ACC002", path="train.py") == []


def test_a_loop_of_steps_keeping_what_each_step_returns_is_reported() -> None:
    [finding] = _acc002(STEP + SCRIPT)
    assert "`results` keeps the autograd graph" in finding.message


WGAN_STEP = """
def train_run(model, batch, optimizer, n_critic=5):
    for _ in range(n_critic):
        critic = model(batch).mean()
        optimizer.zero_grad()
        critic.backward()
        optimizer.step()
    loss = -model(batch).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return {"loss": loss, "last": model(batch)}
"""


def test_a_step_function_with_a_critic_loop_is_still_one_step() -> None:
    [finding] = _acc002(WGAN_STEP + SCRIPT)
    assert "`results` keeps the autograd graph" in finding.message
