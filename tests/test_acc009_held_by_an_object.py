"""ACC009 on a DDP model that reaches the accumulating loop inside another object: `main()` wraps
the model, builds an object that keeps it (`actor = Actor(net=net)`, the actor of a tracking
trainer) and hands that object to the trainer, whose loop calls `self.actor(data)` every
micro-step. The object runs the model whenever it is called (its `__call__` or a module's
`forward`, directly or through its own methods), so the all-reduce runs on every micro-step.
Silent where calling the object does not run the model, where the loop never calls the object,
where the object keeps the unwrapped module, and where the loop controls sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

ACTOR = """
class BaseActor:
    def __init__(self, net, objective):
        STORE
        self.objective = objective

    def __call__(self, data):
        raise NotImplementedError


class Actor(BaseActor):
    def __init__(self, net, objective, weight=1.0):
        super().__init__(net, objective)
        self.weight = weight

    def __call__(self, data):
        RUN
        return self.weight * self.objective(out, data["y"])

    def forward_pass(self, data):
        return self.net(data["x"])
"""

TRAINER = """
import torch


class Trainer:
    def __init__(self, actor, loader, optimizer, accum_iter):
        self.actor = actor
        self.loader = loader
        self.optimizer = optimizer
        self.accum_iter = accum_iter

    def train_epoch(self):
        self.optimizer.zero_grad()
        for i, data in enumerate(self.loader):
            FORWARD
            (loss / self.accum_iter).backward()
            if (i + 1) % self.accum_iter == 0 or i + 1 == len(self.loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

MAIN = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from actor import Actor
from trainer import Trainer


def main(args, net, loader):
    net = DDP(net, device_ids=[args.local_rank])
    actor = Actor(net=net, objective=torch.nn.MSELoss())
    optimizer = torch.optim.AdamW(net.parameters())
    trainer = Trainer(actor, loader, optimizer, args.accum_iter)
    trainer.train_epoch()
"""

STORED = "self.net = net"
DIRECT = 'out = self.net(data["x"])'
THROUGH_A_METHOD = "out = self.forward_pass(data)"
CALLED = "loss = self.actor(data)"


def _acc009(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str = STORED, run: str = DIRECT, forward: str = CALLED) -> list:
    (tmp_path / "actor.py").write_text(ACTOR.replace("STORE", store).replace("RUN", run))
    (tmp_path / "trainer.py").write_text(TRAINER.replace("FORWARD", forward))
    (tmp_path / "train.py").write_text(MAIN)
    monkeypatch.chdir(tmp_path)
    return findings_of(MAIN.encode(), "ACC009", path="train.py")


@pytest.mark.parametrize("run", [DIRECT, THROUGH_A_METHOD], ids=["direct", "through-a-method"])
def test_the_object_that_runs_the_model_is_called_every_micro_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: str) -> None:
    [finding] = _acc009(tmp_path, monkeypatch, run=run)
    assert "the DistributedDataParallel model `net` (wrapped at line 10), held by `actor` as `self.net`" in finding.message
    assert "is handed to `train_epoch()` (trainer.py:" in finding.message
    assert "`self.actor.net.no_sync()`" in finding.message
    assert finding.location.row == MAIN.splitlines().index("    trainer = Trainer(actor, loader, optimizer, args.accum_iter)") + 1


MODULE_HOLDER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class WithLoss(torch.nn.Module):
    def __init__(self, model, criterion):
        super().__init__()
        self.model = model
        self.criterion = criterion

    def forward(self, x, y):
        return self.criterion(self.model(x), y)


def train(model_with_loss, loader, optimizer, k):
    for i, (x, y) in enumerate(loader):
        loss = model_with_loss(x, y) / k
        loss.backward()
        if (i + 1) % k == 0:
            optimizer.step()
            optimizer.zero_grad()
    optimizer.step()


def main(args, model, loader, optimizer):
    model = DDP(model, device_ids=[args.local_rank])
    model_with_loss = WithLoss(model, torch.nn.CrossEntropyLoss())
    train(model_with_loss, loader, optimizer, args.k)
"""


def test_a_module_holding_the_model_in_one_file() -> None:
    result = check_source(MODULE_HOLDER.encode(), "t.py")
    [finding] = [f for f in result.findings if f.code == "ACC009"]
    assert "held by `model_with_loss` as `self.model`" in finding.message
    assert "`model_with_loss.model.no_sync()`" in finding.message


def test_a_module_holding_the_bare_model_is_clean() -> None:
    source = MODULE_HOLDER.replace("model = DDP(model, device_ids=[args.local_rank])\n", "")
    assert [f for f in check_source(source.encode(), "t.py").findings if f.code == "ACC009"] == []


@pytest.mark.parametrize("store,run,forward", [
    # calling the object only logs: the model runs elsewhere, not here
    (STORED, 'out = data["pred"]', CALLED),
    # the loop reads the object (its parameters) but never calls it
    (STORED, DIRECT, 'loss = data["loss"] * sum(p.sum() for p in self.actor.net.parameters())'),
    # the object keeps the module inside the wrapper
    ("self.net = net.module", DIRECT, CALLED),
    (STORED, DIRECT, "with self.actor.net.no_sync():\n                loss = self.actor(data)"),
    # called only without autograd: no graph through the held model to reduce
    (STORED, DIRECT, 'with torch.no_grad():\n                loss = data["loss"] + self.actor(data)'),
], ids=["call-does-not-run-it", "not-called", "unwrapped", "no-sync", "under-no-grad"])
def test_clean_twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, run: str, forward: str) -> None:
    assert _acc009(tmp_path, monkeypatch, store, run, forward) == []


IN_THE_LOOP = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Actor:
    def __init__(self, net, objective):
        self.net = net
        self.objective = objective

    def __call__(self, data):
        RUN


def main(args, net, loader, optimizer):
    net = DDP(net, device_ids=[args.local_rank])
    actor = Actor(net, torch.nn.MSELoss())
    for i, data in enumerate(loader):
        FORWARD
        loss.backward()
        if (i + 1) % args.k == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""

RUNS = 'return self.objective(self.net(data["x"]), data["y"])'
LOOP_CALL = "loss = actor(data) / args.k"


def _in_the_loop(run: str = RUNS, forward: str = LOOP_CALL) -> list:
    source = IN_THE_LOOP.replace("RUN", run).replace("FORWARD", forward)
    return [f for f in check_source(source.encode(), "train.py").findings if f.code == "ACC009"]


def test_the_object_called_in_the_wrapping_function_own_loop() -> None:
    [finding] = _in_the_loop()
    assert finding.location.row == IN_THE_LOOP.splitlines().index("        loss.backward()") + 1
    assert "`net`, the DistributedDataParallel model, held by `actor` as `self.net`" in finding.message
    assert "`actor.net.no_sync()`" in finding.message


@pytest.mark.parametrize("run,forward", [
    ('return data["loss"]', LOOP_CALL),
    (RUNS, 'with torch.no_grad():\n            loss = data["loss"] / args.k + actor(data)'),
], ids=["call-does-not-run-it", "under-no-grad"])
def test_in_the_loop_clean_twins(run: str, forward: str) -> None:
    assert _in_the_loop(run, forward) == []


DISTILLER = """
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Distiller:
    def __init__(self, teacher):
        self.teacher = teacher

    def __call__(self, x, student_logits):
        RUN_TEACHER
        return F.kl_div(student_logits.log_softmax(-1), target, reduction="batchmean")


class Trainer:
    def __init__(self, distiller, student, loader, optimizer, k):
        self.distiller = distiller
        self.student = student
        self.loader = loader
        self.optimizer = optimizer
        self.k = k

    def train_epoch(self):
        for i, x in enumerate(self.loader):
            loss = self.distiller(x, self.student(x)) / self.k
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(self.loader):
                self.optimizer.step()
                self.optimizer.zero_grad()


def main(args, student, teacher, loader):
    student = DDP(student, device_ids=[args.local_rank])
    teacher = DDP(teacher, device_ids=[args.local_rank])
    optimizer = torch.optim.AdamW(student.parameters())
    distiller = Distiller(teacher)
    trainer = Trainer(distiller, student, loader, optimizer, args.k)
    trainer.train_epoch()
"""

TEACHER_NO_GRAD = "with torch.no_grad():\n            target = self.teacher(x).softmax(-1)"


def test_the_model_handed_directly_is_named_before_an_object_holding_another() -> None:
    source = DISTILLER.replace("RUN_TEACHER", TEACHER_NO_GRAD)
    [finding] = [f for f in check_source(source.encode(), "t.py").findings if f.code == "ACC009"]
    assert "`self.student.no_sync()`" in finding.message
    assert "held by" not in finding.message


def test_an_object_running_its_model_only_without_autograd_is_no_holder() -> None:
    source = DISTILLER.replace("RUN_TEACHER", TEACHER_NO_GRAD).replace(
        "    student = DDP(student, device_ids=[args.local_rank])\n", "")
    assert [f for f in check_source(source.encode(), "t.py").findings if f.code == "ACC009"] == []
