"""ACC010 on a loss written out by hand over many statements (log-probabilities gathered, masked,
summed per sequence, normalised) and then divided by the accelerator's own steps before
`accelerator.backward`, which divides again when the Accelerator was built with
`gradient_accumulation_steps`: the loss is followed back through all of it. Script (a function of
the file), trainer-class (a method) and multi-module forms; the twin is the default `Accelerator()`,
which does not divide."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

TOKEN_LOSS = """
def token_loss(model, input_ids, labels, mask):
    logits = model(input_ids).logits
    batch = logits.shape[0]
    log_probs = F.log_softmax(logits, dim=-1)
    picked = labels.clone()
    picked[labels == -100] = 0
    token_logp = log_probs.gather(dim=-1, index=picked.unsqueeze(-1)).squeeze(-1)
    per_seq = -(token_logp * mask).sum(dim=1)
    counts = mask.sum(dim=1).clamp(min=1)
    per_seq = per_seq / counts
    loss = per_seq.sum() / batch
    return loss
"""

LOOP = """
for step, batch in enumerate(loader):
    loss = {call}(model, batch["input_ids"], batch["labels"], batch["mask"])
    loss = loss / accelerator.gradient_accumulation_steps
    accelerator.backward(loss)
    if (step + 1) % cfg.accum == 0 or step + 1 == len(loader):
        opt.step()
        opt.zero_grad()
"""

SCRIPT = (
    "import torch.nn.functional as F\nfrom accelerate import Accelerator\n\n" + TOKEN_LOSS.lstrip() + "\n\n"
    "def train(model, opt, loader, cfg):\n    accelerator = Accelerator({built})\n"
    + textwrap.indent(LOOP.format(call="token_loss").lstrip(), "    ")
)

TRAINER = (
    "import torch.nn.functional as F\nfrom accelerate import Accelerator\n\n\nclass Trainer:\n"
    "    def __init__(self, cfg):\n        self.cfg = cfg\n\n"
    + textwrap.indent(TOKEN_LOSS.replace("(model,", "(self, model,").lstrip(), "    ") + "\n"
    "    def train(self, model, opt, loader, cfg):\n        accelerator = Accelerator({built})\n"
    + textwrap.indent(LOOP.format(call="self.token_loss").lstrip(), "        ")
)

DRIVER = (
    "from accelerate import Accelerator\nfrom pkg.losses import token_loss\n\n\n"
    "def train(model, opt, loader, cfg):\n    accelerator = Accelerator({built})\n"
    + textwrap.indent(LOOP.format(call="token_loss").lstrip(), "    ")
)
BUILT = "gradient_accumulation_steps=cfg.accum"


def _codes(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return [f for f in findings(source, path) if f[0] in {"ACC001", "ACC010"}]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_a_long_hand_written_loss_divided_by_hand_and_by_accelerate(template):
    source = template.format(built=BUILT)
    assert _codes(source) == [("ACC010", row(source, "accelerator.backward(loss)"))]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER])
def test_a_default_accelerator_does_not_divide(template):
    assert _codes(template.format(built="")) == []


def _in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: str) -> list[tuple[str, int]]:
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "losses.py").write_text("import torch.nn.functional as F\n\n" + TOKEN_LOSS.lstrip())
    (tmp_path / "train.py").write_text(DRIVER.format(built=built))
    monkeypatch.chdir(tmp_path)
    return _codes((tmp_path / "train.py").read_text(), "train.py")


def test_a_long_hand_written_loss_from_another_module_divided_twice(tmp_path, monkeypatch):
    assert _in_project(tmp_path, monkeypatch, BUILT) == [("ACC010", row(DRIVER, "accelerator.backward(loss)"))]


def test_a_long_hand_written_loss_with_a_default_accelerator_is_clean(tmp_path, monkeypatch):
    assert _in_project(tmp_path, monkeypatch, "") == []
