"""ACC009 on DistributedDataParallel wrapped around submodules of a model (`dlrm.bot_l =
DDP(dlrm.bot_l)`, as DLRM trains), while the loop runs the whole model forward and accumulates by
hand: each wrapped submodule all-reduces its gradients on every micro-step. Reported at the
backward, naming every wrapped submodule and its `no_sync()`. Silent with those `no_sync()`s,
with a forward under `no_grad`, with a wrapping out of sight, and where the step runs every batch.
Forms: a script, a trainer class, and a model class in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import codes, findings_of

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def main(dlrm, loader, optimizer, k, device_ids):
    WRAP
    for i, (x, y) in enumerate(loader):
        FORWARD
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

WRAPPING = (
    "dlrm.bot_l = DDP(dlrm.bot_l, device_ids=device_ids)\n"
    "    dlrm.top_l = DDP(dlrm.top_l, device_ids=device_ids)"
)

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, k, rank):
        self.model, self.optimizer, self.k = model, optimizer, k
        self.model.encoder = DistributedDataParallel(self.model.encoder, device_ids=[rank])

    def fit(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch) / self.k
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

MODEL = """
import torch


class Recommender(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bot_l = torch.nn.Linear(4, 4)
        self.top_l = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.top_l(self.bot_l(x))
"""

DRIVER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from models.recommender import Recommender


def main(loader, k, rank):
    net = Recommender()
    net.top_l = DDP(net.top_l, device_ids=[rank])
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(net(x), y) / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""


def _script(wrap: str = WRAPPING, forward: str = "loss = dlrm(x, y) / k") -> str:
    return SCRIPT.replace("WRAP", wrap).replace("FORWARD", forward)


def _acc009(source: str, path: str = "t.py") -> list:
    return findings_of(source.encode(), "ACC009", path=path)


def test_script_submodules_wrapped_in_ddp_are_reported_at_the_backward() -> None:
    source = _script()
    [finding] = _acc009(source)
    assert source.splitlines()[finding.location.row - 1].strip() == "loss.backward()"
    assert "`dlrm.bot_l`, `dlrm.top_l` of `dlrm`" in finding.message
    assert "`dlrm.bot_l.no_sync()` and `dlrm.top_l.no_sync()`" in finding.message


def test_trainer_submodule_wrapped_in_ddp_is_reported() -> None:
    [finding] = _acc009(TRAINER)
    assert "`self.model.encoder.no_sync()`" in finding.message


def test_model_class_in_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "recommender.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(DRIVER)
    monkeypatch.chdir(tmp_path)
    [finding] = _acc009(DRIVER, "train.py")
    assert "`net.top_l.no_sync()`" in finding.message


@pytest.mark.parametrize("wrap,forward", [
    ("pass", "loss = dlrm(x, y) / k"),  # nothing wrapped in sight
    (WRAPPING, "with dlrm.bot_l.no_sync(), dlrm.top_l.no_sync():\n            loss = dlrm(x, y) / k"),
    (WRAPPING, "with torch.no_grad():\n            out = dlrm(x, y)\n        loss = out.sum() / k"),
])
def test_script_clean_twins(wrap: str, forward: str) -> None:
    assert _acc009(_script(wrap, forward)) == []


def test_step_on_every_batch_is_clean() -> None:
    source = _script().replace("(i + 1) % k == 0 or i + 1 == len(loader)", "True")
    assert "ACC009" not in codes(source)


DIST_HELPERS = """
from torch.nn.parallel import DistributedDataParallel as DDP

my_size = 1
"""

GLOBAL_SCRIPT = """
import torch
import extend_distributed as ext_dist


def dlrm_wrap(X, y):
    return dlrm(X, y)


def run(loader, k, device_ids, make_model):
    global dlrm
    dlrm = make_model()
    optimizer = torch.optim.SGD(dlrm.parameters(), lr=0.1)
    dlrm.bot_l = ext_dist.DDP(dlrm.bot_l, device_ids=device_ids)
    for i, (x, y) in enumerate(loader):
        loss = dlrm_wrap(x, y) / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""


def test_ddp_imported_through_a_project_module_and_a_global_model_run_by_a_module_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "extend_distributed.py").write_text(DIST_HELPERS)
    (tmp_path / "train.py").write_text(GLOBAL_SCRIPT)
    monkeypatch.chdir(tmp_path)
    [finding] = _acc009(GLOBAL_SCRIPT, "train.py")
    assert "`dlrm.bot_l.no_sync()`" in finding.message


def test_a_local_model_is_not_the_global_a_module_function_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = GLOBAL_SCRIPT.replace("    global dlrm\n", "")
    (tmp_path / "extend_distributed.py").write_text(DIST_HELPERS)
    (tmp_path / "train.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert _acc009(source, "train.py") == []
