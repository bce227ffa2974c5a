"""ACC002 on a container that holds the loss: a Lightning `training_step` may return
`{"loss": loss, ...}` (the trainer backwards its "loss"), and keeping that dict on the object for
the epoch keeps every step's graph. The finding stands, but `.detach()` on a dict raises
AttributeError on the first step, so no fix is offered and the message asks for the tensors it
holds to be detached. The twin that keeps the returned tensor itself keeps its safe fix. Helper method,
inline and helper-module forms."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of

MODULE = """
import torch
from lightning import LightningModule


class Forecaster(LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(2, 1)
        self.training_step_outputs = []

    def step(self, x, y):
        out = self.net(x)
        loss = ((out - y) ** 2).mean()
        {made}
        return log, out

    def training_step(self, batch, batch_idx):
        x, y = batch
        log, out = self.step(x, y)
        self.training_step_outputs.append(log)
        return log

    def on_train_epoch_end(self):
        self.training_step_outputs.clear()
"""

DICT = 'log = {"loss": loss, "n_samples": x.size(0)}'
TENSOR = "log = loss"


def _check(tmp_path: Path, files: dict[str, str], target: str):
    (tmp_path / ".git").mkdir(exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    path = tmp_path / target
    return findings_of(path.read_bytes(), path=str(path), select=("ACC002",))


def test_a_returned_dict_kept_on_the_object_is_reported_without_a_fix(tmp_path: Path):
    (finding,) = _check(tmp_path, {"model.py": MODULE.replace("{made}", DICT)}, "model.py")
    assert finding.fix is None
    assert "log.detach()" not in finding.message
    assert "detach the tensors it holds" in finding.message


def test_the_returned_tensor_itself_keeps_its_safe_fix(tmp_path: Path):
    (finding,) = _check(tmp_path, {"model.py": MODULE.replace("{made}", TENSOR)}, "model.py")
    assert finding.fix is not None and finding.fix.applicability == "safe"
    assert "`log.detach()`" in finding.message


def test_dict_built_in_the_training_step_itself(tmp_path: Path):
    inline = MODULE.replace("{made}", "pass").replace(
        "log, out = self.step(x, y)", 'loss, out = self.step(x, y)\n        log = {"loss": loss}'
    ).replace("return log, out", "return loss, out")
    (finding,) = _check(tmp_path, {"model.py": inline}, "model.py")
    assert finding.fix is None


def test_step_helper_in_another_module(tmp_path: Path):
    helper = """
        def step(net, x, y):
            out = net(x)
            loss = ((out - y) ** 2).mean()
            {made}
            return log, out
    """
    model = """
        import torch
        from lightning import LightningModule

        from steps import step


        class Forecaster(LightningModule):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(2, 1)
                self.training_step_outputs = []

            def training_step(self, batch, batch_idx):
                x, y = batch
                log, out = step(self.net, x, y)
                self.training_step_outputs.append(log)
                return log

            def on_train_epoch_end(self):
                self.training_step_outputs.clear()
    """
    for made, fixed in ((DICT, False), (TENSOR, True)):
        (finding,) = _check(tmp_path, {"steps.py": helper.replace("{made}", made), "model.py": model}, "model.py")
        assert (finding.fix is not None) is fixed, made
