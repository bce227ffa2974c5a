"""An object is taken for a GradScaler by its name only when the name ends with the word
(`scaler`, `grad_scaler`, `scaler_g`): `scaler_meter.update(value)`, a meter of the loss scale,
updated every micro-step, is no scaler update (ACC008), in a script or a trainer class."""

from __future__ import annotations


import pytest

from tests.snippets import codes as _codes

SCRIPT = """
def train(model, loader, optimizer, k, {name}):
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
        {name}.update({argument})
"""

TRAINER = """
class Trainer:
    def __init__(self, model, optimizer, k, {name}):
        self.model, self.optimizer, self.k, self.{name} = model, optimizer, k, {name}

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean() / self.k
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
            self.{name}.update({argument})
"""




@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("name", ["scaler_meter", "scaler_value_meter"])
def test_a_meter_named_after_the_scale_is_no_scaler(template, name):
    assert _codes(template.format(name=name, argument="1.0")) == []


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
@pytest.mark.parametrize("name", ["scaler", "grad_scaler", "scaler_g"])
def test_a_scaler_updated_every_micro_step(template, name):
    assert _codes(template.format(name=name, argument="")) == ["ACC008"]
