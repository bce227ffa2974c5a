"""Which files are analysed at all: a file with no sign of training or evaluation (no loss,
optimizer, scaler, backward, evaluation pass or meter) is parsed and nothing more. Words every
module uses are no sign: a denoising loop calls `scheduler.step(...)`, appends and adds in place."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine

DENOISING = """
import torch


def sample(unet, scheduler, latents, timesteps, parameters):
    frames = []
    for t in timesteps:
        noise = unet(latents, t)
        latents = scheduler.step(noise, t, latents).prev_sample
        frames.append(latents)
        latents += 0
    return frames
"""


def test_a_denoising_loop_is_not_analysed():
    assert not engine._might_have_findings(DENOISING)


@pytest.mark.parametrize("sign", [
    "loss = criterion(out, y)", "optimizer.step()", "scaler.update()", "loss.backward()",
    "model.eval()", "meter.update(out)", "meters[name].add(out)", "top1 = AverageMeter()",
    "g = torch.autograd.grad(y, x, create_graph=True)", "def training_step(self, batch):",
    "acc = metric.compute()", "results = evaluate(model)", "model = DistributedDataParallel(model)",
    "model = smart_DDP(model)", "model = FSDP(model)  # FullyShardedDataParallel", "fully_shard(model)",
])
def test_a_sign_of_training_or_evaluation_makes_it_analysed(sign):
    assert engine._might_have_findings(DENOISING + "\n" + sign + "\n")


def test_an_evaluation_pass_keeping_outputs_in_a_meter_is_still_reported():
    source = textwrap.dedent("""
        import torch


        class Meter:
            def __init__(self):
                self.outputs = []

            def add(self, output):
                self.outputs.append(output)


        def evaluate(model, loader):
            model.eval()
            meter = Meter()
            for x, y in loader:
                meter.add(model(x))
            return torch.cat(meter.outputs).mean().item()
    """).lstrip()
    assert [f.code for f in engine.check_source(source, "e.py").findings] == ["ACC002"]
