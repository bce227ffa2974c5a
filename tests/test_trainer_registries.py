"""A trainer picked from a module-level dict of the project's classes
(`trainer = TRAINERS[args.task](args)`) runs the method every class in the dict shares: the
base's `train`, inherited by each task's subclass. A DDP model handed to it is then the model
that loop accumulates with (ACC009). Where a class in the dict overrides the method, which one
runs is unknown and nothing is reported. An engine's own `model.backward(loss)` on another
branch (DeepSpeed) is not where the DDP model syncs."""

from __future__ import annotations

import textwrap

from snippets import findings, row

SOURCE = """
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, args):
        self.accumulation_steps = args.accumulation_steps
        self.current_step = 1

    def forward_propagation(self, batch, model):
        raise NotImplementedError

    def train(self, args, loader, model, optimizer):
        for batch in loader:
            loss = self.forward_propagation(batch, model)
            {backward}
            if self.current_step % self.accumulation_steps == 0:
                optimizer.step()
                model.zero_grad()
            self.current_step += 1


class LmTrainer(Trainer):
    def forward_propagation(self, batch, model):
        return model(batch).mean() / self.accumulation_steps


class ClsTrainer(Trainer):
    def forward_propagation(self, batch, model):
        return model(batch).mean() / self.accumulation_steps
{override}

TRAINERS = {"lm": LmTrainer, "cls": ClsTrainer}


def worker(local_rank, args, model, loader, optimizer):
    if args.dist_train:
        model = DistributedDataParallel(model, device_ids=[local_rank])
    trainer = TRAINERS[args.task](args)
    trainer.train(args, loader, model, optimizer)
"""
PLAIN = "loss.backward()"
ENGINE_BRANCH = "if args.deepspeed:\n                model.backward(loss)\n            else:\n                loss.backward()"
OVERRIDE = """
    def train(self, args, loader, model, optimizer):
        for batch in loader:
            self.forward_propagation(batch, model).backward()
            optimizer.step()
            optimizer.zero_grad()
"""


def _source(backward: str = PLAIN, override: str = "") -> str:
    return textwrap.dedent(SOURCE).replace("{backward}", backward).replace("{override}", override)


def _acc009(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC009"]


def test_the_method_every_registered_class_inherits_runs_the_handed_ddp_model():
    source = _source()
    assert _acc009(source) == [row(source, "loss.backward()")]


def test_a_registered_class_that_overrides_the_method_leaves_it_unknown():
    assert _acc009(_source(override=OVERRIDE)) == []


def test_the_finding_is_on_the_plain_backward_not_the_engines_own():
    source = _source(ENGINE_BRANCH)
    assert _acc009(source) == [row(source, "loss.backward()", last=True)]


def test_a_registry_holding_something_else_than_classes_of_the_module_is_not_read():
    source = _source().replace('TRAINERS = {"lm": LmTrainer, "cls": ClsTrainer}', 'TRAINERS = {"lm": LmTrainer, "cls": make_trainer}')
    assert _acc009(source) == []
