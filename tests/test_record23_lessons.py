"""Shapes learned from the heldout23 record, each with the twin that must still be reported:
- ACC012: `assert k == 1` at the top of the loop's own function, before the loop, pins the
  accumulation count to 1 there (a trainer with a second training method that accumulates).
- ACC005: a step block that ends the run or tests a step count (`if global_step >= max_steps:
  ...; return`) shares the gate with bookkeeping: the flush is reported without a fix.
- ACC005: `if step_idx == max_steps: break` with `step_idx = batch_idx // k` cuts the run at a
  window boundary the code chose, as `>=` does.
- ACC002: an evaluation loop inside a project context manager whose `__enter__` enters a
  `torch.no_grad()` it made (`with eval_mode(model, no_grad=True):`) runs without autograd.
- ACC003: state handed back by a project model whose `forward` fills it from the layers it walks
  (`for attn, ff in self.layers: x, mem = attn(x); mems.append(mem)`) is out of sight: silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings, findings_of

TWO_METHODS = """
import torch


class Strategy:
    def __init__(self, model, optimizer, grad_accumulation_steps):
        self.model, self.optimizer = model, optimizer
        self.grad_accumulation_steps = grad_accumulation_steps

    def run_training(self, dataloader, epochs):
        steps = epochs * (len(dataloader) // self.grad_accumulation_steps)
        for epoch in range(epochs):
            for idx, batch in enumerate(dataloader):
                loss = self.model(batch) / self.grad_accumulation_steps
                loss.backward()
                if (idx + 1) % self.grad_accumulation_steps == 0 or idx + 1 == len(dataloader):
                    self.optimizer.step()
                    self.optimizer.zero_grad()
        return steps

    def run_single_training(self, dataloader):
        PIN
        for batch in dataloader:
            loss = self.model(batch)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def _codes(source: str, path: str = "t.py") -> list[str]:
    return [code for code, _ in findings(source, path)]


def test_acc012_assert_k_is_one_at_the_top_of_the_loops_function() -> None:
    assert "ACC012" not in _codes(TWO_METHODS.replace("PIN", 'assert self.grad_accumulation_steps == 1, "no accumulation"'))


@pytest.mark.parametrize("pin", ["pass", "if self.model.training:\n            assert self.grad_accumulation_steps == 1"])
def test_acc012_without_an_unconditional_assert_is_still_reported(pin: str) -> None:
    assert "ACC012" in _codes(TWO_METHODS.replace("PIN", pin))


STEP_BLOCK = """
import torch


def train(model, optimizer, dataset, k, max_steps, epochs):
    loader = torch.utils.data.DataLoader(dataset, batch_size=8)
    for epoch in range(epochs):
        optimizer.zero_grad()
        for i, batch in enumerate(loader):
            loss = model(batch) / k
            loss.backward()
            if (i + 1) % k == 0:
                optimizer.step()
                optimizer.zero_grad()
                BOOKKEEPING
"""


def _acc005(source: str):
    return findings_of(source.encode(), "ACC005")


@pytest.mark.parametrize("bookkeeping", [
    "metrics.commit(global_step=metrics.global_step + 1)\n                if metrics.global_step >= max_steps:\n                    return",
    "if epoch * len(loader) + i >= max_steps:\n                    return",
])
def test_acc005_step_block_that_ends_the_run_gets_no_fix(bookkeeping: str) -> None:
    [finding] = _acc005(STEP_BLOCK.replace("BOOKKEEPING", bookkeeping))
    assert finding.fix is None


def test_acc005_plain_step_block_keeps_its_fix() -> None:
    [finding] = _acc005(STEP_BLOCK.replace("BOOKKEEPING", "pass"))
    assert finding.fix is not None


BREAK_ON_STEPS = """
import torch


def finetune(model, optimizer, dataloader, k, max_steps):
    for batch_idx, batch in enumerate(dataloader):
        loss = model(batch) / k
        loss.backward()
        gradient_step_idx = batch_idx // k
        if (batch_idx + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
        STOP
"""


def test_acc005_break_when_the_step_index_equals_a_bound() -> None:
    source = BREAK_ON_STEPS.replace("STOP", 'if gradient_step_idx == max_steps:\n            print("done")\n            break')
    assert _acc005(source) == []


def test_acc005_break_on_an_optional_bound_is_no_cut() -> None:
    stop = (
        "if max_steps is not None:\n            print(max_steps)\n"
        "        if gradient_step_idx == max_steps:\n            break"
    )
    assert len(_acc005(BREAK_ON_STEPS.replace("STOP", stop))) == 1


def test_acc005_no_break_is_still_reported() -> None:
    assert len(_acc005(BREAK_ON_STEPS.replace("STOP", "pass"))) == 1


CONTEXTS = """
import torch


class eval_mode:
    def __init__(self, *models, no_grad=False):
        self.models = models
        self.no_grad = no_grad
        self.no_grad_context = torch.no_grad()

    def __enter__(self):
        for model in self.models:
            model.train(False)
        if self.no_grad:
            self.no_grad_context.__enter__()

    def __exit__(self, *args):
        if self.no_grad:
            self.no_grad_context.__exit__(*args)
        return False
"""

LATENTS = """
import torch

from utils.contexts import eval_mode


class Policy:
    def get_latents(self, loader):
        total_mse_loss = 0.0
        with eval_mode(self.encoder, SWITCH):
            for obs, action in loader:
                total_mse_loss += torch.nn.functional.mse_loss(action, self.encoder(obs), reduction="sum")
        print(total_mse_loss)
"""


@pytest.mark.parametrize("switch,reported", [("no_grad=True", False), ("no_grad=False", True), ("", True)])
def test_acc002_project_context_manager_that_turns_autograd_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str, reported: bool
) -> None:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("")
    (tmp_path / "utils" / "contexts.py").write_text(CONTEXTS)
    source = LATENTS.replace("SWITCH", switch).replace(", )", ")")
    (tmp_path / "policy.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert ("ACC002" in _codes(source, "policy.py")) == reported


MEMORY_MODEL = """
import torch
from torch import nn


class MemoryTransformer(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.rnn = nn.GRU(8, 8)

    def forward(self, x, mems=None):
        new_mems = [] if mems is not None else None
        for attn, ff in self.layers:
            x, mem = attn(x)
            new_mems.append(mem)
            x = ff(x)
        return x.sum(), new_mems


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 8)

    def forward(self, x, hidden=None):
        out, hidden = self.rnn(x, hidden)
        return out.sum(), hidden
"""

SEGMENTS = """
import torch

from model import MODEL


def train(segments):
    model = MODEL()
    optimizer = torch.optim.Adam(model.parameters())
    state = None
    for segment in segments:
        loss, state = model(segment, state)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("model,reported", [("MemoryTransformer", False), ("Recurrent", True)])
def test_acc003_state_from_walked_layers_is_out_of_sight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, reported: bool
) -> None:
    (tmp_path / "model.py").write_text(MEMORY_MODEL)
    source = SEGMENTS.replace("MODEL", model)
    (tmp_path / "train.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert ("ACC003" in _codes(source, "train.py")) == reported
