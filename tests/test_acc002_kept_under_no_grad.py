"""ACC002 on a tensor kept as it is under `no_grad` (`with torch.no_grad(): losses.append(loss)`)
and on a step function that keeps its loss in a container its caller hands it on every iteration
(`self._update(batch, metrics)` with `metrics["loss"].append(loss)` inside).

`no_grad` and `inference_mode` make only what is computed inside them graph-free: a list that keeps
`loss` itself keeps the tensor made before the block, with its graph. Arithmetic under them
(`total += loss`, `losses.append(loss * 2)`) makes a new tensor without one, and a name bound again
inside the block is a new value: those stay clean. Forms: a script, a trainer class, and a step
method whose container comes from a caller in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of

SCRIPT = """
import torch


def train(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        with torch.no_grad():
            STORE
    return sum(v.item() for v in losses) / len(losses)
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt
        self.history = []

    def fit(self, loader):
        for x, y in loader:
            loss = (self.model(x) - y).pow(2).mean()
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            with torch.inference_mode():
                STORE
"""

STEP = """
import torch


class PPO:
    def __init__(self, model, opt):
        self.model = model
        self.opt = opt

    def update_from_batch(self, batch, metrics):
        value_loss = self.model(batch).pow(2).mean()
        action_loss = self.model(batch).abs().mean()
        total = value_loss + action_loss
        self.opt.zero_grad()
        total.backward()
        self.opt.step()
        with torch.inference_mode():
            STORE
"""

UPDATE = """
    def update(self, batches, epochs):
        metrics = collections.defaultdict(list)
        for _ in range(epochs):
            for batch in batches:
                self.update_from_batch(batch, metrics)
        return {k: float(torch.stack(v).mean()) for k, v in metrics.items()}
"""


def _acc002(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC002", path=path)


def _fill(template: str, store: str, indent: int) -> str:
    return textwrap.dedent(template).replace("STORE", store.replace("\n", "\n" + " " * indent))


def _line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_script_appending_under_no_grad_is_reported_with_a_fix() -> None:
    source = _fill(SCRIPT, "losses.append(loss)", 12)
    found = _acc002(source)
    assert len(found) == 1
    assert found[0].location.row == _line_of(source, "losses.append(loss)")
    assert "`no_grad` does not detach a tensor made before it" in found[0].message
    fixed = fix_source(source, "train.py", select=("ACC002",)).fixed_source
    assert fixed is not None and "losses.append(loss.detach())" in fixed
    assert _acc002(fixed) == []


def test_trainer_keeping_the_loss_on_self_under_inference_mode_is_reported() -> None:
    source = _fill(TRAINER, "self.history.append(loss)", 16)
    found = _acc002(source)
    assert len(found) == 1
    assert "`self.history`" in found[0].message and "`no_grad` does not detach" in found[0].message


@pytest.mark.parametrize("store", [
    "losses.append(loss * 2)",            # computed under no_grad: a new tensor without a graph
    "losses.append(loss.detach())",
    "total = loss\nlosses.append(total + 0)",
    "loss = model(x).sum()\nlosses.append(loss)",  # bound again inside the block: made without autograd
])
def test_script_clean_twins(store: str) -> None:
    assert _acc002(_fill(SCRIPT, store, 12)) == []


@pytest.mark.parametrize("store", [
    "self.history.append(loss.item())",
    "self.history.append(loss + 0)",
    "self.total = self.history.append(0)",
])
def test_trainer_clean_twins(store: str) -> None:
    assert _acc002(_fill(TRAINER, store, 16)) == []


def test_running_total_under_no_grad_is_clean() -> None:
    source = _fill(SCRIPT, "total = loss", 12).replace("losses = []", "losses = []\n    running = 0.0").replace(
        "            total = loss", "            running += loss")
    assert _acc002(source) == []


def test_step_method_keeping_its_loss_in_the_callers_container_is_reported() -> None:
    source = "import collections\n" + _fill(STEP, 'metrics["value_loss"].append(value_loss)', 12) + _indented(UPDATE)
    found = _acc002(source)
    assert len(found) == 1
    assert found[0].location.row == _line_of(source, 'metrics["value_loss"].append(value_loss)')
    assert "`update` hands it the same `metrics` on every iteration" in found[0].message
    assert found[0].fix is None  # other callers may hand it a fresh container


def _indented(block: str) -> str:
    return textwrap.indent(textwrap.dedent(block), "    ")


@pytest.mark.parametrize("store", [
    'metrics["value_loss"].append(value_loss.detach())',
    'metrics["value_loss"].append(value_loss.item())',
    'metrics["value_loss"].append(value_loss * 1)',
])
def test_step_method_clean_twins(store: str) -> None:
    source = "import collections\n" + _fill(STEP, store, 12) + _indented(UPDATE)
    assert _acc002(source) == []


def test_container_started_anew_every_iteration_is_clean() -> None:
    update = UPDATE.replace(
        "            for batch in batches:\n                self.update_from_batch(batch, metrics)",
        "            for batch in batches:\n                metrics = collections.defaultdict(list)\n"
        "                self.update_from_batch(batch, metrics)",
    )
    source = "import collections\n" + _fill(STEP, 'metrics["value_loss"].append(value_loss)', 12) + _indented(update)
    assert _acc002(source) == []


def test_step_function_without_its_own_backward_is_clean() -> None:
    source = "import collections\n" + _fill(STEP, 'metrics["value_loss"].append(value_loss)', 12) + _indented(UPDATE)
    source = source.replace("        total.backward()\n", "")
    assert _acc002(source) == []


@pytest.mark.parametrize("store,found", [
    ('metrics["value_loss"].append(value_loss)', 1),
    ('metrics["value_loss"].append(value_loss.detach())', 0),
])
def test_caller_in_another_module(tmp_path: Path, store: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    step = tmp_path / "ppo.py"
    step.write_text(_fill(STEP, store, 12))
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import collections\n\nimport torch\n\nfrom ppo import PPO\n\n\n"
        "def update(agent: PPO, batches, epochs):\n"
        "    metrics = collections.defaultdict(list)\n"
        "    for _ in range(epochs):\n"
        "        for batch in batches:\n"
        "            agent.update_from_batch(batch, metrics)\n"
        "    return {k: float(torch.stack(v).mean()) for k, v in metrics.items()}\n"
    )
    findings = _acc002(runner.read_text(), str(runner))
    assert len(findings) == found
    if found:
        assert findings[0].filename.endswith("ppo.py")
        assert findings[0].location.row == _line_of(step.read_text(), store)
        assert "`update` hands it the same `metrics` on every iteration, line 12" in findings[0].message
