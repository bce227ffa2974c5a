"""ACC009 and a DistributedDataParallel model whose forward keeps no graph: a distillation teacher
run under `torch.no_grad()`, or whose outputs are detached at once (`t = t.detach()`,
`ts = [t.detach() for t in ts]`), gets no gradient and never all-reduces, however the student
accumulates. A teacher whose outputs reach backward still reduces on every micro-step. Script and
trainer-class forms."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(student, teacher, loader, optimizer, accum):
    teacher = DDP(teacher)
    for step, (x, y) in enumerate(loader):
        {teacher}
        loss = torch.nn.functional.mse_loss(student(x)[0], outputs[0]) / accum
        loss.backward()
        if (step + 1) % accum == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Distiller:
    def __init__(self, student, teacher, optimizer, accum):
        self.student = student
        self.teacher = DDP(teacher)
        self.optimizer, self.accum = optimizer, accum

    def train_epoch(self, loader):
        for step, (x, y) in enumerate(loader):
            {teacher}
            loss = torch.nn.functional.mse_loss(self.student(x)[0], outputs[0]) / self.accum
            loss.backward()
            if (step + 1) % self.accum == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

GRAPH_FREE = [
    "with torch.no_grad():\n{i}    outputs = {t}(x)",
    "outputs = {t}(x)\n{i}outputs = outputs.detach()",
    "outputs, _ = {t}(x)\n{i}outputs = [o.detach() for o in outputs]",
]


def acc009(source: str) -> list:
    return findings_of(source, "ACC009", path="case.py", dedent=True)


@pytest.mark.parametrize("form, owner, indent", [(SCRIPT, "teacher", " " * 8), (TRAINER, "self.teacher", " " * 12)])
@pytest.mark.parametrize("teacher", GRAPH_FREE)
def test_a_teacher_that_gets_no_gradient_never_reduces(form, owner, indent, teacher):
    assert acc009(form.format(teacher=teacher.format(i=indent, t=owner))) == []


@pytest.mark.parametrize("form, owner", [(SCRIPT, "teacher"), (TRAINER, "self.teacher")])
def test_a_teacher_whose_outputs_reach_backward_reduces_every_micro_step(form, owner):
    [finding] = acc009(form.format(teacher=f"outputs = {owner}(x)"))
    assert "every micro-step" in finding.message


def test_a_model_whose_output_fields_reach_backward_reduces_every_micro_step():
    """Read through a field (`outputs.cache`), the outputs still carry the model's graph."""
    source = SCRIPT.format(teacher="outputs = teacher(x)").replace("outputs[0]", "outputs.cache")
    [finding] = acc009(source)
    assert "every micro-step" in finding.message
