"""ACC004 reads the branches of one setting: `if fp16 and native_amp: scaler.unscale_(opt); clip`
/ `elif fp16: clip(amp.master_params(opt))` / `else: clip(...)`, and later `if fp16 and native_amp:
scaler.step(opt)`. The clips on the apex and fp32 branches never meet the GradScaler's step, so
they clip unscaled gradients. Script and trainer-class forms; the twin steps through the scaler
whatever the setting, and the fp32 branch's clip is reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings, row

STEP_BLOCK = """
if fp16 and native_amp:
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
elif fp16:
    torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
else:
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
{stepping}
optimizer.zero_grad()
"""

BY_SETTING = """
if fp16 and native_amp:
    scaler.step(optimizer)
    scaler.update()
else:
    optimizer.step()
"""
ALWAYS = """
scaler.step(optimizer)
scaler.update()
"""


def _script(stepping: str) -> str:
    block = textwrap.indent(STEP_BLOCK.replace("{stepping}", stepping.strip()).strip(), "            ")
    return (
        "import torch\nfrom apex import amp\n\n\n"
        "def train(model, optimizer, scaler, loader, k, fp16, native_amp):\n"
        "    for step, batch in enumerate(loader):\n"
        "        scaler.scale(model(batch) / k).backward()\n"
        "        if (step + 1) % k == 0 or step + 1 == len(loader):\n" + block + "\n"
    )


def _trainer(stepping: str) -> str:
    block = STEP_BLOCK.replace("{stepping}", stepping.strip()).strip()
    for name in ("fp16", "native_amp", "scaler", "optimizer", "model"):
        block = block.replace(f"{name} ", f"self.{name} ").replace(f"{name}.", f"self.{name}.").replace(f"({name}", f"(self.{name}").replace(f"{name}:", f"self.{name}:")
    return (
        "import torch\nfrom apex import amp\n\n\nclass Trainer:\n"
        "    def __init__(self, model, optimizer, scaler, k, fp16, native_amp):\n"
        "        self.model, self.optimizer, self.scaler, self.k = model, optimizer, scaler, k\n"
        "        self.fp16, self.native_amp = fp16, native_amp\n\n"
        "    def train(self, loader):\n"
        "        for step, batch in enumerate(loader):\n"
        "            self.scaler.scale(self.model(batch) / self.k).backward()\n"
        "            if (step + 1) % self.k == 0 or step + 1 == len(loader):\n"
        + textwrap.indent(block, "                ") + "\n"
    )


def _acc004(source: str) -> list[tuple[str, int]]:
    return [f for f in findings(source) if f[0] == "ACC004"]


@pytest.mark.parametrize("build", [_script, _trainer], ids=["script", "trainer"])
def test_clips_on_branches_the_scaler_never_steps_are_clean(build):
    assert _acc004(build(BY_SETTING)) == []


@pytest.mark.parametrize("build", [_script, _trainer], ids=["script", "trainer"])
def test_the_fp32_clip_is_reported_when_the_scaler_always_steps(build):
    source = build(ALWAYS)
    rows = [f[1] for f in _acc004(source)]
    assert row(source, "0.5)") in rows
