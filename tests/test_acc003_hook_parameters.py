"""ACC003 in a framework hook called once per batch (Lightning's `training_step` under manual
optimisation): its parameters and locals start anew on every call, so `batch =
self.batch_transform(batch)` carries nothing into the next batch. A hidden state kept on `self`
and fed back in still does. Forms: a module whose transform is its own method, and one whose
transform comes from another module of the project."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


MODULE = """
import lightning as L


class VideoModule(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.automatic_optimization = False
        self.hidden = None

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        {body}
        self.manual_backward(loss)
        opt.step()
"""

REBIND = "batch = self.batch_transform(batch)\n        loss = self.model(batch).mean()"
CARRY = "out, self.hidden = self.model(batch, self.hidden)\n        loss = out.mean()"


def _acc003(text: str, filename: str = "module.py") -> int:
    return len(findings_of(text.encode(), path=filename, select=("ACC003",)))


def test_rebinding_the_hooks_batch_carries_nothing():
    source = textwrap.dedent(MODULE).replace("{body}", REBIND)
    source += "\n    def batch_transform(self, batch):\n        return self.model.augment(batch)\n"
    assert _acc003(source) == 0


def test_hidden_state_on_self_is_still_carried():
    assert _acc003(textwrap.dedent(MODULE).replace("{body}", CARRY)) == 1


def test_transform_from_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "transforms.py").write_text("def mix(model, batch):\n    return model.augment(batch)\n")
    path = tmp_path / "module.py"
    body = "batch = mix(self.model, batch)\n        loss = self.model(batch).mean()"
    path.write_text("from transforms import mix\n" + textwrap.dedent(MODULE).replace("{body}", body))
    assert findings_of(path.read_bytes(), path=str(path), select=("ACC003",)) == []
