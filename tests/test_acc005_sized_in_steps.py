"""ACC005 on data made as long as the run's optimizer steps need: a dataset built with
`num_instances=batch_size * args.num_training_steps`, read through its loader and progress bar,
holds whole windows by the author's design, so no partial window is in sight and nothing is
reported. The same loop over a dataset sized by its examples keeps the finding, and so does one
whose size multiplies something that is not a count of optimizer steps (warmup, accumulation).
Forms: a script's function, a trainer class that builds its loader in `__init__`, and a dataset
class from another module of the project."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


SCRIPT = """
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from data import StreamDataset


def train(args, model, optimizer, examples):
    dataset = StreamDataset(examples, num_instances={size})
    loader = DataLoader(dataset, batch_size=args.batch_size // args.gradient_accumulation_steps)
    bar = tqdm(loader)
    for step, batch in enumerate(bar):
        loss = model(batch) / args.gradient_accumulation_steps
        loss.backward()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
from torch.utils.data import DataLoader

from data import StreamDataset


class Trainer:
    def __init__(self, args, model, optimizer, examples):
        self.model, self.optimizer, self.k = model, optimizer, args.accum
        self.loader = DataLoader(StreamDataset(examples, {size}), batch_size=8)

    def fit(self):
        for i, batch in enumerate(self.loader):
            loss = self.model(batch) / self.k
            loss.backward()
            if (i + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

DATA = """
from torch.utils.data import Dataset


class StreamDataset(Dataset):
    def __init__(self, examples, num_instances):
        self.examples = examples
        self.num_instances = num_instances

    def __len__(self):
        return self.num_instances

    def __getitem__(self, index):
        return self.examples[index % len(self.examples)]
"""


def _acc005(tmp_path: Path, source: str, size: str) -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "data.py").write_text(textwrap.dedent(DATA))
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(source).replace("{size}", size))
    return [f.location.row for f in findings_of(path.read_bytes(), path=str(path), select=("ACC005",))]


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def test_script_over_data_sized_in_optimizer_steps_is_silent(tmp_path: Path):
    assert _acc005(tmp_path, SCRIPT, "args.batch_size * args.num_training_steps") == []
    assert _acc005(tmp_path, SCRIPT, "args.max_steps * args.batch_size") == []


def test_script_over_data_sized_otherwise_keeps_the_finding(tmp_path: Path):
    gate = _row(SCRIPT, "if (step + 1) %")
    assert _acc005(tmp_path, SCRIPT, "len(examples)") == [gate]
    assert _acc005(tmp_path, SCRIPT, "args.batch_size * args.warmup_steps") == [gate]
    assert _acc005(tmp_path, SCRIPT, "args.batch_size * args.gradient_accumulation_steps") == [gate]


def test_trainer_class_building_its_loader_in_init(tmp_path: Path):
    assert _acc005(tmp_path, TRAINER, "num_instances=8 * args.total_steps") == []
    assert _acc005(tmp_path, TRAINER, "num_instances=len(examples)") == [_row(TRAINER, "if (i + 1) %")]


def test_in_one_module_too():
    source = textwrap.dedent(SCRIPT).replace("from data import StreamDataset\n", textwrap.dedent(DATA))
    for size, expected in (("args.batch_size * args.num_training_steps", 0), ("len(examples)", 1)):
        assert len(findings_of(source.replace("{size}", size).encode(), path="train.py", select=("ACC005",))) == expected
