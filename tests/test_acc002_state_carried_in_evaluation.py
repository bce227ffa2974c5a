"""ACC002 on an evaluation loop over data that runs with autograd on and hands the state a forward
made back into the next forward (`output, hidden = model(data, hidden)`, as a language model's
`evaluate()` does without `torch.no_grad()`): the graphs chain from batch to batch and memory grows
with each. Reported at that forward, with `torch.no_grad()` around the loop as the unsafe fix.
Silent under `no_grad` (in the function or at its call), where the state is detached or
repackaged in the loop, where the function runs a backward, and where it hands back more than
numbers. Forms: a script, a trainer class, and a batch helper in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings, row

SCRIPT = """
import torch


def evaluate(model, criterion, data_source, bptt, eval_batch_size):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    BEFORE
    for i in range(0, data_source.size(0) - 1, bptt):
        data, targets = data_source[i:i + bptt], data_source[i + 1:i + 1 + bptt]
        output, hidden = model(data, hidden)
        INSIDE
        total_loss += len(data) * criterion(output, targets).item()
    return RETURNED


def main(model, criterion, val_data):
    CALL
"""

TRAINER = """
import torch


class LanguageModelTrainer:
    def __init__(self, model, criterion, bptt):
        self.model, self.criterion, self.bptt = model, criterion, bptt

    def evaluate(self, data_source, batch_size):
        self.model.eval()
        total = 0.0
        state = self.model.init_hidden(batch_size)
        for i in range(0, len(data_source) - 1, self.bptt):
            chunk = data_source[i:i + self.bptt + 1]
            logits, state = self.model(chunk[:-1], state)
            total += self.criterion(logits, chunk[1:]).item()
        return total
"""

BATCHES = """
def get_batch(source, i, bptt=35):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)
"""

DRIVER = """
import torch

from data.batches import get_batch


def evaluate(model, criterion, data_source, bptt, eval_batch_size):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    for i in range(0, data_source.size(0) - 1, bptt):
        data, targets = get_batch(data_source, i)
        output, hidden = model(data, hidden)
        total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)
"""


def _script(before: str = "pass", inside: str = "pass", returned: str = "total_loss / len(data_source)",
            call: str = "return evaluate(model, criterion, val_data, 35, 10)") -> str:
    return (
        SCRIPT.replace("BEFORE", before).replace("INSIDE", inside).replace("RETURNED", returned).replace("CALL", call)
    )


def _acc002(source: str, path: str = "t.py") -> list[int]:
    return [line for code, line in findings(source, path) if code == "ACC002"]


def test_script_state_carried_through_the_forward_is_reported_there() -> None:
    source = _script()
    assert _acc002(source) == [row(source, "output, hidden = model(data, hidden)")]


def test_the_fix_runs_the_loop_under_no_grad_and_is_unsafe() -> None:
    result = check_source(_script().encode(), "t.py")
    [finding] = [f for f in result.findings if f.code == "ACC002"]
    assert "`hidden` carries the autograd graph of every batch into the next one" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert "with torch.no_grad():" in finding.fix.edits[0].content


def test_trainer_state_carried_through_the_forward_is_reported() -> None:
    assert _acc002(TRAINER) == [row(TRAINER, "logits, state = self.model(chunk[:-1], state)")]


def test_batch_helper_in_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__init__.py").write_text("")
    (tmp_path / "data" / "batches.py").write_text(BATCHES)
    (tmp_path / "evaluate.py").write_text(DRIVER)
    monkeypatch.chdir(tmp_path)
    assert _acc002(DRIVER, "evaluate.py") == [row(DRIVER, "output, hidden = model(data, hidden)")]


@pytest.mark.parametrize("before,inside,returned,call", [
    ("torch.set_grad_enabled(False)", "pass", "total_loss", "return evaluate(model, criterion, val_data, 35, 10)"),
    ("pass", "hidden = hidden.detach()", "total_loss", "return evaluate(model, criterion, val_data, 35, 10)"),
    ("pass", "criterion(output, targets).backward()", "total_loss", "return evaluate(model, criterion, val_data, 35, 10)"),
    ("pass", "pass", "total_loss, hidden", "return evaluate(model, criterion, val_data, 35, 10)"),
    ("pass", "pass", "total_loss", "with torch.no_grad():\n        return evaluate(model, criterion, val_data, 35, 10)"),
])
def test_script_clean_twins(before: str, inside: str, returned: str, call: str) -> None:
    assert _acc002(_script(before, inside, returned, call)) == []


def test_a_models_own_loop_over_time_steps_is_not_an_evaluation_pass() -> None:
    source = """
    import torch


    class Decoder(torch.nn.Module):
        def forward(self, inputs, hidden):
            outputs = []
            for t in range(inputs.size(0)):
                out, hidden = self.cell(inputs[t], hidden)
                outputs.append(out)
            return torch.stack(outputs), hidden
    """
    assert _acc002(source) == []
