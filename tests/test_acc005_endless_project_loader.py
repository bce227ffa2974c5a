"""A multi-task loader whose `__iter__` loops `while True:` (sampling a task, restarting exhausted
loaders) never ends, so a loop over it has no epoch and no partial window: no ACC005, also when
it is wrapped (`PrefetchLoader(meta_loader)`) and when the classes live in another module. Script,
trainer-class and multi-module forms; the twin's `__iter__` runs out with its data and is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings, row

LOADERS = """
class MetaLoader:
    def __init__(self, loaders):
        self.loaders = loaders

    def __iter__(self):
        {iteration}


class PrefetchLoader:
    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        for batch in self.loader:
            yield batch

    def __len__(self):
        return len(self.loader)
"""
ENDLESS = (
    "iters = {n: iter(l) for n, l in self.loaders.items()}\n"
    "        while True:\n"
    "            name = random.choice(list(iters))\n"
    "            try:\n"
    "                batch = next(iters[name])\n"
    "            except StopIteration:\n"
    "                iters[name] = iter(self.loaders[name])\n"
    "                batch = next(iters[name])\n"
    "            yield name, batch"
)
FINITE = "for name, loader in self.loaders.items():\n            for batch in loader:\n                yield name, batch"

SCRIPT_LOOP = """
def train(model, optimizer, loaders, k):
    meta_loader = MetaLoader(loaders)
    meta_loader = PrefetchLoader(meta_loader)
    for step, (name, batch) in enumerate(meta_loader):
        loss = model(batch) / k
        loss.backward()
        if (step + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
"""
TRAINER_LOOP = """
class Trainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k

    def train(self, loaders):
        meta_loader = PrefetchLoader(MetaLoader(loaders))
        for step, (name, batch) in enumerate(meta_loader):
            loss = self.model(batch) / self.k
            loss.backward()
            if (step + 1) % self.k == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def _in_one_file(loop: str, iteration: str) -> str:
    return "import random\n" + LOADERS.replace("{iteration}", iteration) + "\n" + loop


def _acc005(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return [f for f in findings(source, path) if f[0] == "ACC005"]


@pytest.mark.parametrize("loop", [SCRIPT_LOOP, TRAINER_LOOP], ids=["script", "trainer"])
def test_an_endless_project_loader_has_no_partial_window(loop):
    assert _acc005(_in_one_file(loop, ENDLESS)) == []


@pytest.mark.parametrize("loop", [SCRIPT_LOOP, TRAINER_LOOP], ids=["script", "trainer"])
def test_a_project_loader_that_runs_out_drops_its_tail(loop):
    source = _in_one_file(loop, FINITE)
    assert _acc005(source) == [("ACC005", row(source, "% "))]


@pytest.mark.parametrize("iteration, reported", [(ENDLESS, False), (FINITE, True)], ids=["endless", "finite"])
def test_the_loader_classes_in_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, iteration, reported):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__init__.py").write_text("from .loader import MetaLoader, PrefetchLoader\n")
    (tmp_path / "data" / "loader.py").write_text("import random\n" + LOADERS.replace("{iteration}", iteration))
    driver = "from data import MetaLoader, PrefetchLoader\n\n" + SCRIPT_LOOP
    (tmp_path / "train.py").write_text(driver)
    monkeypatch.chdir(tmp_path)
    assert bool(_acc005(driver, "train.py")) == reported
