"""ACC005's message names the step as the code writes it; where one step block holds several
steppers (`xm.optimizer_step(optimizer)` on TPU, `scaler.step(optimizer)` under AMP, and
`optimizer.step()`), it names the optimizer's own."""

from __future__ import annotations

from accumlint import engine

SOURCE = """
import torch
import torch_xla.core.xla_model as xm


def train(model, loader, k, on_tpu, amp):
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = torch.cuda.amp.GradScaler()
    for step, batch in enumerate(loader):
        loss = model(batch) / k
        loss.backward()
        if (step + 1) % k == 0:
            if on_tpu:
                xm.optimizer_step(optimizer)
            elif amp:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad()
"""


def test_the_message_names_the_optimizers_own_step():
    messages = [f.message for f in engine.check_source(SOURCE.lstrip(), "t.py").findings if f.code == "ACC005"]
    assert len(messages) == 1
    assert "never reach `optimizer.step()`" in messages[0]


WRAPPED = """
import torch


class NoamOptim:
    def __init__(self, optimizer, warmup):
        self.optimizer = optimizer
        self.warmup = warmup
        self.steps = 0

    def step(self):
        self.steps += 1
        for group in self.optimizer.param_groups:
            group["lr"] = min(self.steps ** -0.5, self.steps * self.warmup ** -1.5)
        self.optimizer.step()


def train(model, loader, k):
    optimizer = NoamOptim(torch.optim.Adam(model.parameters()), 4000)
    for step, batch in enumerate(loader):
        loss = model(batch) / k
        loss.backward()
        if (step + 1) % k == 0:
            optimizer.step()
            model.zero_grad()
"""


def test_a_project_optimizer_wrapper_is_named_by_its_step_call():
    messages = [f.message for f in engine.check_source(WRAPPED.lstrip(), "t.py").findings if f.code == "ACC005"]
    assert len(messages) == 1
    assert "never reach `optimizer.step()` in their epoch" in messages[0]
