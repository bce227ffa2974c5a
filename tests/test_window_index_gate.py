"""A window read from an index within it that the loop does not compute (a data generator hands
it over): `if meta["grad_accum_index"] == args.grad_accum_steps - 1:` holds the step. The loss
must then be divided by the steps (ACC001); the epoch is the generator's business, so no partial
window is claimed (ACC005). A comparison with `n - 1` whose names do not speak of the window (the
last batch, the last epoch) is no gate."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

SCRIPT = """
import torch.nn.functional as F

def train(model, batches, optimizer, args):
    for meta, batch in batches:
        loss = F.cross_entropy(model(batch["x"]), batch["y"]){divide}
        loss.backward()
        if {index} == args.grad_accum_steps - 1:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import torch.nn.functional as F

class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self.model, self.optimizer, self.accum_steps = model, optimizer, accum_steps

    def fit(self, batches):
        for accum_idx, batch in batches:
            loss = F.cross_entropy(self.model(batch["x"]), batch["y"]){divide}
            loss.backward()
            if {index} == self.accum_steps - 1:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


@pytest.mark.parametrize("template, index", [(SCRIPT, 'meta["grad_accum_index"]'), (TRAINER, "accum_idx")])
def test_the_last_index_of_the_window_gates_the_step(template, index):
    source = template.format(index=index, divide="")
    assert findings(source) == [("ACC001", row(source, "loss.backward()"))]


@pytest.mark.parametrize("template, k", [(SCRIPT, "args.grad_accum_steps"), (TRAINER, "self.accum_steps")])
def test_the_divided_loss_is_clean(template, k):
    assert findings(template.format(index='meta["grad_accum_index"]', divide=f" / {k}")) == []


@pytest.mark.parametrize("template, index", [(SCRIPT, 'meta["batch_index"]'), (TRAINER, "len(batches)")])
def test_an_index_that_does_not_speak_of_the_window_is_no_gate(template, index):
    assert findings(template.format(index=index, divide="")) == []
