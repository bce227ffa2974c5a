"""A checkout whose root folder is the package it imports itself by (`from mae_st.engine import
train_one_epoch` beside `engine.py`, with no `mae_st/` folder inside): its imports reach its own
modules, whether the checkout's folder carries the package's name or not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint.project import ProjectIndex
from tests.snippets import findings_of


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def _codes(path: Path) -> set[str]:
    return {f.code for f in findings_of(path.read_bytes(), path=str(path)) if f.filename == str(path)}


SCALER = """
    import torch


    class Scaler:
        def __init__(self):
            self._scaler = torch.cuda.amp.GradScaler()

        def __call__(self, loss, optimizer, update_grad=True):
            self._scaler.scale(loss).backward()
            if update_grad:
                self._scaler.step(optimizer)
                self._scaler.update()
                optimizer.zero_grad()
"""

# Script form: the step runs through the package's own scaler class.
SCRIPT = """
    from {pkg}.util.scaler import Scaler
    from {pkg}.util.data import make_loader

    k = 4
    scaler = Scaler()
    loader = make_loader()
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        scaler(loss, optimizer, update_grad={gate})
"""

# Trainer form: the subclass's loop calls a base-class method of another module of the package.
TRAINER = """
    from {pkg}.core.base import BaseTrainer


    class Trainer(BaseTrainer):
        def fit(self, loader):
            for i, batch in enumerate(loader):
                loss = self.model(batch).mean() / self.accum
                self.backward(loss)
                if (i + 1) % self.accum == 0 or i + 1 == len(loader):
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""

BASE = """
    class BaseTrainer:
        def __init__(self, model, optimizer, accum):
            self.model = model
            self.optimizer = optimizer
            self.accum = accum

        def backward(self, loss):
            {zero}
            loss.backward()
"""

# Multi-module form: main() wraps the model in DDP and hands it, with a scaler it builds in the
# call, to the package's epoch function in another module.
MAIN = """
    import torch
    from {pkg}.engine import train_one_epoch
    from {pkg}.util.scaler import Scaler


    def main(args):
        model = {wrap}
        optimizer = torch.optim.AdamW(model.parameters())
        for epoch in range(args.epochs):
            train_one_epoch(model, args.loader, optimizer, Scaler(), args)
"""

ENGINE = """
    def train_one_epoch(model, loader, optimizer, loss_scaler, args):
        accum_iter = args.accum_iter
        for it, batch in enumerate(loader):
            loss = model(batch).mean() / accum_iter
            loss_scaler(loss, optimizer, update_grad={gate})
"""

DROPS_TAIL = "(it + 1) % accum_iter == 0"
KEEPS_TAIL = "(it + 1) % accum_iter == 0 or it + 1 == len(loader)"

# A checkout named as its package, and one that is not (a fork, an exported tree).
FOLDERS = ["mypkg", "mypkg-main"]


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize(("gate", "expected"), [
    ("(i + 1) % k == 0", {"ACC005"}),
    ("(i + 1) % k == 0 or i + 1 == len(loader)", set()),
])
def test_script_steps_through_the_packages_own_scaler(tmp_path, folder, gate, expected):
    root = _project(tmp_path / folder, {
        "train.py": SCRIPT.format(pkg="mypkg", gate=gate),
        "util/scaler.py": SCALER,
        "util/data.py": "def make_loader():\n    return []\n",
    })
    assert _codes(root / "train.py") == expected


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize(("zero", "expected"), [
    ("self.optimizer.zero_grad()", {"ACC007"}),
    ("pass", set()),
])
def test_trainer_calls_a_base_method_of_the_package(tmp_path, folder, zero, expected):
    root = _project(tmp_path / folder, {
        "trainer.py": TRAINER.format(pkg="mypkg"),
        "core/base.py": BASE.format(zero=zero),
        "core/__init__.py": "",
        "train.py": "from mypkg.trainer import Trainer\n",
    })
    assert _codes(root / "trainer.py") == expected


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize(("wrap", "gate", "expected"), [
    ("torch.nn.parallel.DistributedDataParallel(build(args))", DROPS_TAIL, {"ACC005", "ACC009"}),
    ("build(args)", KEEPS_TAIL, set()),
])
def test_main_hands_the_model_to_the_packages_epoch_function(tmp_path, folder, wrap, gate, expected):
    root = _project(tmp_path / folder, {
        "main.py": MAIN.format(pkg="mypkg", wrap=wrap),
        "engine.py": ENGINE.format(gate=gate),
        "util/scaler.py": SCALER,
    })
    assert _codes(root / "main.py") == expected


def test_a_library_beside_same_named_local_folders_is_not_the_project(tmp_path):
    # `torch.utils.data` beside a local `utils/data.py`: torch's `nn` is not here, so torch is
    # not the project's own name; nor is a library whose every import finds only packages here.
    root = _project(tmp_path / "checkout", {
        "train.py": "import torch.utils.data\nimport torch.nn\nimport mmdet.models\nimport mmdet.utils\n",
        "utils/data.py": "",
        "models/__init__.py": "",
        "utils/__init__.py": "",
    })
    index = ProjectIndex(root)
    assert index.own_package_names() == {"checkout"}
    assert index.module_file(root / "train.py", "torch.utils.data") is None
    assert index.module_file(root / "train.py", "mmdet.models") is None


def test_a_local_package_of_that_name_comes_first(tmp_path):
    root = _project(tmp_path / "mypkg", {
        "mypkg/engine.py": "",
        "engine.py": "",
        "train.py": "import mypkg.engine\n",
    })
    index = ProjectIndex(root)
    assert index.module_file(root / "train.py", "mypkg.engine") == root / "mypkg" / "engine.py"
