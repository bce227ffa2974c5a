"""ACC003 where the carried state is a field of the model's output (`outputs = model(x,
memory=memory)`, then `memory = outputs.memory` and `outputs.loss.backward()`), as Hugging Face
style outputs return it: the loss read from the same output makes that forward part of the
backward's graph. The field is read in the project's forward: reported when that forward shows a
graph in it (`memory=h`), clean when it hands the state back detached (`memory=h.detach()`, in an
output object, a dict or a tuple; also a tuple element, which was reported before). A model whose
forward is out of sight (a library model, one handed in, layers walked in a loop) may detach its
memory itself, as Transformer-XL does: silent.
The same reading tells ACC006 that a per-segment `retain_graph=True` backward with the state made
anew for each batch only adds up one sequence's gradients.
Forms: a loop over batches, a segment loop inside a batch loop, the model in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

OVER_SEGMENTS = """
def train(loader, optimizer, accelerator):
    model = MemoryModel()
    for batch in loader:
        memory = None
        for segment in batch.split(2048, dim=1):
            outputs = model(segment, memory=memory)
            memory = outputs.memory
            BACKWARD
        optimizer.step()
        optimizer.zero_grad()
"""

MODEL = """
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Output:
    loss: torch.Tensor
    memory: torch.Tensor


class MemoryModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, memory=None):
        h = self.proj(x) if memory is None else self.proj(x) + memory
        return RETURNED
"""

PROJECT_LOOP = """
def train(loader, optimizer):
    model = MemoryModel()
    memory = None
    for batch in loader:
        STEP
        optimizer.step()
        optimizer.zero_grad()
"""

FIELD_STEP = "outputs = model(batch, memory=memory)\n        memory = outputs.memory\n        outputs.loss.backward()"
SLOT_STEP = 'outputs = model(batch, memory=memory)\n        memory = outputs["memory"]\n        outputs["loss"].backward()'
TUPLE_STEP = "loss, memory = model(batch, memory=memory)\n        loss.backward()"


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.strip() == text)


@pytest.mark.parametrize("step", [FIELD_STEP, SLOT_STEP])
def test_a_state_read_from_the_output_is_reported(step: str) -> None:
    returned = '{"loss": h.pow(2).mean(), "memory": h}' if "outputs[" in step else "Output(loss=h.pow(2).mean(), memory=h)"
    source = MODEL.replace("RETURNED", returned) + PROJECT_LOOP.replace("STEP", step)
    [finding] = findings_of(source, "ACC003")
    state = step.splitlines()[1].strip()
    assert finding.location.row == _row(source, state)
    assert "`memory` carries this iteration's autograd graph" in finding.message
    detached = source.replace("memory=h)", "memory=h.detach())").replace('"memory": h}', '"memory": h.detach()}')
    assert detached != source and findings_of(detached, "ACC003") == []


@pytest.mark.parametrize("state", ["outputs.memory", 'outputs["memory"]', "outputs.mems"])
def test_a_field_of_a_model_out_of_sight_is_not_reported(state: str) -> None:
    source = """
def train(model, loader, optimizer):
    memory = None
    for batch in loader:
        outputs = model(batch, memory=memory)
        memory = STATE
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""".replace("STATE", state)
    assert findings_of(source, "ACC003") == []


def test_a_segment_loop_carrying_the_field_is_reported() -> None:
    model = MODEL.replace("RETURNED", "Output(loss=h.pow(2).mean(), memory=h)")
    source = model + OVER_SEGMENTS.replace("BACKWARD", "outputs.loss.backward()")
    [finding] = findings_of(source, "ACC003")
    assert finding.location.row == _row(source, "memory = outputs.memory")


@pytest.mark.parametrize("call", ["outputs.loss.backward(retain_graph=True)", "accelerator.backward(outputs.loss, retain_graph=True)"])
def test_retained_segment_passes_only_add_up_one_sequence(call: str) -> None:
    # The state is made anew for each batch: keeping every segment's graph is full BPTT on
    # purpose (no ACC003), and one backward of the summed losses would give the same gradients.
    model = MODEL.replace("RETURNED", "Output(loss=h.pow(2).mean(), memory=h)")
    source = model + OVER_SEGMENTS.replace("BACKWARD", call)
    assert findings_of(source, "ACC003") == []
    [finding] = findings_of(source, "ACC006")
    assert "one backward of the summed losses after the loop gives the same gradients" in finding.message
    assert "no later backward" not in finding.message


@pytest.mark.parametrize(
    "returned, step",
    [
        ("Output(loss=h.pow(2).mean(), memory=h.detach())", FIELD_STEP),
        ('{"loss": h.pow(2).mean(), "memory": h.detach()}', SLOT_STEP),
        ("h.pow(2).mean(), h.detach()", TUPLE_STEP),
    ],
)
def test_a_project_model_that_returns_its_state_detached_is_clean(returned: str, step: str) -> None:
    source = MODEL.replace("RETURNED", returned) + PROJECT_LOOP.replace("STEP", step)
    assert findings_of(source, "ACC003") == []
    undetached = source.replace("h.detach()", "h")
    [finding] = findings_of(undetached, "ACC003")
    assert "`memory`" in finding.message


def test_the_model_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    model = tmp_path / "memory_model.py"
    model.write_text(MODEL.replace("RETURNED", "Output(loss=h.pow(2).mean(), memory=h.detach())"))
    train = tmp_path / "train.py"
    train.write_text("from memory_model import MemoryModel\n\n" + PROJECT_LOOP.replace("STEP", FIELD_STEP))
    assert findings_of(train.read_bytes(), "ACC003", path=str(train)) == []
    model.write_text(MODEL.replace("RETURNED", "Output(loss=h.pow(2).mean(), memory=h)"))
    [finding] = findings_of(train.read_bytes(), "ACC003", path=str(train))
    assert finding.filename.endswith("train.py")


DATA_REFRESHED = """
import torch
from dataclasses import dataclass


@dataclass
class TrainState:
    step: int
    scale: float
    loader_state: object


def refresh(loader):
    state = loader.get_state()
    rebuilt = state.build()
    return state, rebuilt, rebuilt.create_iter()


def train(model, make_loader, optimizer, args, preempted):
    loader = make_loader()
    train_state = TrainState(step=0, scale=1.0, loader_state=loader.get_state())
    batch_iterator = loader.create_iter()
    while train_state.step < args.steps:
        batch = next(batch_iterator)
        x = torch.from_numpy(batch.x)
        loss = model(x).mean() / train_state.scale
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        train_state.step += 1
        if preempted():
            train_state.loader_state, loader, batch_iterator = refresh(loader)
"""


def test_a_data_iterator_refreshed_in_the_loop_is_no_state() -> None:
    # `batch.x` is drawn from the data (`next(batch_iterator)`) and `train_state.scale` is a field
    # of an object built from values: neither leads back to a forward, so the iterator and the
    # loader it is rebuilt from are data, not a carried state.
    assert findings_of(DATA_REFRESHED, "ACC003") == []
