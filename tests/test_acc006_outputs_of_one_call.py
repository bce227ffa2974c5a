"""ACC006 with two outputs of one forward call backward-ed in turn (`loss, memories = model(x)`;
`loss.backward(retain_graph=True)`; `memories.backward(grad)`, memory-replay backpropagation): the
second pass runs through the graph the first kept, so the finding is that one backward of both
would do, never that no later backward uses the graph. Twin: the second output comes from a
separate forward, and the retained graph is then never used again. Forms: a module method, a
script loop, and the model's step in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

METHOD = """
import torch


class Replay(torch.nn.Module):
    def forward(self, segments, memories):
        memories_grad = torch.zeros_like(memories)
        total = 0.0
        for segment in segments:
            loss, next_memories = self.transformer(segment, memories)
            SECOND
            loss.backward(retain_graph=True)
            next_memories.backward(memories_grad)
            total += loss.item()
        return total
"""

SCRIPT = """
import torch

grad = torch.zeros(4)
memories = torch.zeros(4)
for segment in segments:
    loss, next_memories = model(segment, memories)
    SECOND
    loss.backward(retain_graph=True)
    next_memories.backward(grad)
    optimizer.step()
    optimizer.zero_grad()
"""

SAME = "pass"
SEPARATE = "_, next_memories = model(segment.flip(0), memories)"


def _acc006(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC006", path=path)


@pytest.mark.parametrize("template", [METHOD, SCRIPT])
def test_two_outputs_of_one_forward(template: str) -> None:
    source = textwrap.dedent(template)
    found = _acc006(source.replace("SECOND", SAME))
    assert len(found) == 1
    assert "one backward of the summed losses" in found[0].message
    assert "no later backward" not in found[0].message
    separate = SEPARATE.replace("model(", "self.transformer(") if template is METHOD else SEPARATE
    other = _acc006(source.replace("SECOND", separate))
    assert len(other) == 1 and "no later backward in the iteration goes through it" in other[0].message


def test_step_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "replay.py").write_text(textwrap.dedent(METHOD).replace("SECOND", SAME))
    (tmp_path / "train.py").write_text("from replay import Replay\n\nReplay()(segments, memories)\n")
    found = _acc006((tmp_path / "replay.py").read_text(), str(tmp_path / "replay.py"))
    assert len(found) == 1 and "no later backward" not in found[0].message
