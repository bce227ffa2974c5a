"""A project dataset built with `infinite=True` restarts its data whenever it runs out, so the loop
over it has no epoch end and no partial window: no ACC005, also when the loader comes back from a
project function (`train_dl, eval_dl = create_dataloaders(args)`, `loader = self.build_loader()`)
and through `accelerator.prepare`. The run ends on a step count checked right after the step. The
twin builds the same dataset with `infinite=False`, runs out with its data, and is reported.
Forms: a script with a loader-building function, a trainer whose method builds the loader, and the
dataset and builder in a module of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings, findings_of, row

DATASET = """
import torch
from torch.utils.data import DataLoader, IterableDataset


class ChunkDataset(IterableDataset):
    def __init__(self, texts, infinite=False):
        self.texts = texts
        self.infinite = infinite

    def __iter__(self):
        iterator = iter(self.texts)
        more = True
        while more:
            try:
                yield next(iterator)
            except StopIteration:
                if self.infinite:
                    iterator = iter(self.texts)
                else:
                    more = False


def create_dataloaders(args):
    train_data = ChunkDataset(args.train, infinite=SWITCH)
    valid_data = ChunkDataset(args.valid, infinite=False)
    return DataLoader(train_data, batch_size=8), DataLoader(valid_data, batch_size=8)
"""

SCRIPT = """
from accelerate import Accelerator

accelerator = Accelerator()


def train(args, model, optimizer):
    train_dataloader, eval_dataloader = create_dataloaders(args)
    model, optimizer, train_dataloader, eval_dataloader = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader
    )
    completed_steps = 0
    for step, batch in enumerate(train_dataloader, start=1):
        loss = model(batch).loss / args.gradient_accumulation_steps
        accelerator.backward(loss)
        if step % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            completed_steps += 1
        if completed_steps >= args.max_train_steps:
            break
"""

TRAINER = """
class Trainer:
    def __init__(self, args, model, optimizer):
        self.args, self.model, self.optimizer = args, model, optimizer
        self.global_step = 0

    def build_loader(self):
        return DataLoader(ChunkDataset(self.args.train, infinite=SWITCH), batch_size=8)

    def train(self):
        loader = self.build_loader()
        k = self.args.gradient_accumulation_steps
        for step, batch in enumerate(loader):
            loss = self.model(batch) / k
            loss.backward()
            if (step + 1) % k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.global_step += 1
            if self.global_step >= self.args.max_steps:
                break
"""


def _acc005(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return [f for f in findings(source, path) if f[0] == "ACC005"]


@pytest.mark.parametrize("loop", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_an_infinite_dataset_has_no_partial_window(loop):
    assert _acc005((DATASET + loop).replace("SWITCH", "True")) == []


@pytest.mark.parametrize("loop", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_dataset_that_runs_out_drops_its_tail(loop):
    source = (DATASET + loop).replace("SWITCH", "False")
    assert _acc005(source) == [("ACC005", row(source, "% "))]


@pytest.mark.parametrize("switch, reported", [("True", False), ("False", True)], ids=["infinite", "finite"])
def test_the_dataset_in_another_module(tmp_path: Path, switch, reported):
    (tmp_path / ".git").mkdir()
    (tmp_path / "data.py").write_text(DATASET.replace("SWITCH", switch))
    path = tmp_path / "train.py"
    path.write_text("from data import create_dataloaders\n" + SCRIPT)
    assert bool(findings_of(path.read_bytes(), path=str(path), select=("ACC005",))) == reported
