"""ACC009 when `accelerator.accumulate(unet)` names only some of the models the Accelerator prepared
for DDP: a text encoder trained beside the UNet and run in the block all-reduces on every
micro-step, since `accumulate()` enters `no_sync()` only for the models it is given. Twins: every
trained model is given (as arguments, or a list built in sight), the other model is kept in eval
mode or run under `no_grad`, and a launch the code does not show to be DDP. Forms: a script, a
trainer class, and the text encoder run by a helper of another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings_of

SCRIPT = """
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs
HELPER_IMPORT


def main(args, unet, text_encoder, loader, noise_fn):
    accelerator = Accelerator(
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        kwargs_handlers=[KWARGS],
    )
    params = list(unet.parameters()) + list(text_encoder.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    unet, text_encoder, optimizer, loader = accelerator.prepare(unet, text_encoder, optimizer, loader)
    models_to_accumulate = [unet]
    EXTRA
    for epoch in range(args.epochs):
        unet.train()
        text_encoder.train()
        for step, batch in enumerate(loader):
            MODE
            with accelerator.accumulate(ACCUMULATED):
                ENCODE
                pred = unet(batch["latents"], states)
                loss = torch.nn.functional.mse_loss(pred, noise_fn(batch))
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
"""

TRAINER = """
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs


class Trainer:
    def __init__(self, args, unet, text_encoder, loader):
        self.args = args
        self.accelerator = Accelerator(
            gradient_accumulation_steps=args.gradient_accumulation_steps,
            kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)],
        )
        optimizer = torch.optim.AdamW(list(unet.parameters()) + list(text_encoder.parameters()), lr=1e-4)
        self.unet, self.text_encoder, self.optimizer, self.loader = self.accelerator.prepare(
            unet, text_encoder, optimizer, loader
        )

    def train(self):
        self.unet.train()
        self.text_encoder.train()
        for batch in self.loader:
            with self.accelerator.accumulate(ACCUMULATED):
                states = self.text_encoder(batch["input_ids"])[0]
                loss = self.unet(batch["latents"], states).pow(2).mean()
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

HELPER = """
def encode(text_encoder, input_ids):
    return text_encoder(input_ids)[0]
"""

DDP = "DistributedDataParallelKwargs(find_unused_parameters=True)"


def _acc009(source: str, path: str = "train.py") -> list:
    return findings_of(source.encode(), "ACC009", path=path)


def _script(
    accumulated: str = "unet", extra: str = "pass", mode: str = "pass",
    encode: str = 'states = text_encoder(batch["input_ids"])[0]', kwargs: str = DDP, helper_import: str = "",
) -> str:
    return (
        textwrap.dedent(SCRIPT).replace("ACCUMULATED", accumulated).replace("EXTRA", extra).replace("MODE", mode)
        .replace("ENCODE", encode).replace("KWARGS", kwargs).replace("HELPER_IMPORT", helper_import)
    )


def test_script_text_encoder_left_out_is_reported() -> None:
    source = _script()
    found = _acc009(source)
    assert len(found) == 1
    assert found[0].location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "accumulate(unet)" in line)
    assert "`text_encoder`" in found[0].message and "pass it to `accumulate` too" in found[0].message


@pytest.mark.parametrize("kwargs", [
    {"accumulated": "unet, text_encoder"},
    {"accumulated": "[unet, text_encoder]"},
    {"accumulated": "models_to_accumulate", "extra": "models_to_accumulate.append(text_encoder)"},
    {"accumulated": "*models_to_accumulate", "extra": "models_to_accumulate.extend([text_encoder])"},
    {"mode": "text_encoder.eval()"},  # kept in eval mode while the UNet trains
    {"encode": 'with torch.no_grad():\n                    states = text_encoder(batch["input_ids"])[0]'},
    {"kwargs": ""},  # the launch decides whether there is DDP at all: not in sight
])
def test_script_clean_twins(kwargs: dict) -> None:
    assert _acc009(_script(**kwargs)) == []


def test_script_models_list_without_the_encoder_is_reported() -> None:
    assert len(_acc009(_script(accumulated="models_to_accumulate"))) == 1


@pytest.mark.parametrize("accumulated,found", [("self.unet", 1), ("self.unet, self.text_encoder", 0)])
def test_trainer(accumulated: str, found: int) -> None:
    assert len(_acc009(textwrap.dedent(TRAINER).replace("ACCUMULATED", accumulated))) == found


@pytest.mark.parametrize("accumulated,found", [("unet", 1), ("unet, text_encoder", 0)])
def test_encoder_run_by_a_helper_of_another_module(tmp_path: Path, accumulated: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPER))
    train = tmp_path / "train.py"
    train.write_text(_script(
        accumulated=accumulated, encode='states = encode(text_encoder, batch["input_ids"])', helper_import="from helpers import encode"
    ))
    assert len(_acc009(train.read_text(), str(train))) == found
