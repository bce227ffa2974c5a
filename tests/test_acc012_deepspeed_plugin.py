"""ACC012 under Accelerate: a script that reads its accelerator's DeepSpeed plugin
(`accelerator.state.deepspeed_plugin`) runs under DeepSpeed, whose engine divides by k and steps
once per window behind `accelerator.backward` (k from the launch config). Its prepared
`optimizer.step()` every micro-step is then no bug. The twin, with no sign of DeepSpeed, sizes its
schedule in windows and steps every micro-step: reported."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

SCRIPT = """
import math

from accelerate import Accelerator
from transformers import get_scheduler


def main(args, model, optimizer, loader):
    accelerator = Accelerator(mixed_precision="fp16")
{plugin}
    steps = math.ceil(len(loader) / accelerator.gradient_accumulation_steps) * args.epochs
    lr_scheduler = get_scheduler("cosine", optimizer=optimizer, num_training_steps=steps)
    model, optimizer, loader, lr_scheduler = accelerator.prepare(model, optimizer, loader, lr_scheduler)
    for epoch in range(args.epochs):
        for batch in loader:
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
"""

PLUGIN = '    accelerator.state.deepspeed_plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = args.bsz'


def _codes(plugin: str) -> list[str]:
    text = textwrap.dedent(SCRIPT).lstrip("\n").replace("{plugin}", plugin)
    return [f.code for f in findings_of(text, path="case.py")]


def test_a_script_run_under_the_deepspeed_plugin_is_clean():
    assert "ACC012" not in _codes(PLUGIN)


def test_without_deepspeed_the_every_micro_step_step_is_reported():
    assert "ACC012" in _codes("")
