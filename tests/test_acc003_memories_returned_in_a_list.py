"""ACC003 where the model hands its memories back as the tail of a list (`return [loss] +
new_mems`) and the loop reads them by slicing (`ret = para_model(data, target, *mems)`, then
`loss, mems = ret[0], ret[1:]`), as Transformer-XL's training script does. What the slice holds
is read in the project's forward: memories rebuilt under `torch.no_grad()` (or detached) are
clean, memories that keep the graph are reported.
The model is often called through a data-parallel wrapper chosen on branches (`para_model =
nn.DataParallel(model)`, a project subclass of it that changes how the batch is split,
`para_model = model.to(device)`, `model = DDP(model)`): such a wrapper runs the wrapped model's
forward, so that forward decides.
Forms: a script loop, branches of wrappers, a trainer method, the model in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

MODEL = """
import torch
from torch import nn


class MemTransformer(nn.Module):
    def __init__(self, n_layer):
        super().__init__()
        self.word_emb = nn.Embedding(1000, 16)
        self.layers = nn.ModuleList([nn.Linear(16, 16) for _ in range(n_layer)])
        self.crit = nn.CrossEntropyLoss()

    def init_mems(self):
        return [torch.empty(0) for _ in self.layers]

    def _update_mems(self, hids, mems):
        if mems is None:
            return None
        with torch.no_grad():
            new_mems = []
            for i in range(len(hids)):
                cat = torch.cat([mems[i], hids[i]], dim=0)
                new_mems.append(cat[-32:].detach())
        return new_mems

    def _forward(self, data, mems):
        hids = []
        core_out = self.word_emb(data)
        hids.append(core_out)
        for layer in self.layers:
            core_out = layer(core_out)
            hids.append(core_out)
        new_mems = self._update_mems(hids, mems)
        return core_out, new_mems

    def forward(self, data, target, *mems):
        if not mems:
            mems = self.init_mems()
        hidden, new_mems = self._forward(data, mems=mems)
        loss = self.crit(hidden, target)
        if new_mems is None:
            return [loss]
        return [loss] + new_mems
"""

# The memory is the last layer's output itself, graph and all.
KEEPS_GRAPH = MODEL.replace("new_mems = self._update_mems(hids, mems)", "new_mems = [core_out]")


SCRIPT = """

class BalancedDataParallel(nn.DataParallel):
    def __init__(self, gpu0_bsz, *args, **kwargs):
        self.gpu0_bsz = gpu0_bsz
        super().__init__(*args, **kwargs)

    def forward(self, *inputs, **kwargs):
        inputs, kwargs = self.scatter(inputs, kwargs, self.device_ids)
        replicas = self.replicate(self.module, self.device_ids)
        outputs = self.parallel_apply(replicas, inputs, kwargs)
        return self.gather(outputs, self.output_device)


def train(args, train_iter, optimizer):
    model = MemTransformer(args.n_layer)
    WRAP
    mems = tuple()
    for data, target in train_iter:
        ret = para_model(data, target, *mems)
        loss, mems = ret[0], ret[1:]
        loss = loss.float().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""

BRANCHES = """if args.multi_gpu:
        if args.gpu0_bsz >= 0:
            para_model = BalancedDataParallel(args.gpu0_bsz, model, dim=1).to(args.device)
        else:
            para_model = nn.DataParallel(model, dim=1).to(args.device)
    else:
        para_model = model.to(args.device)"""

def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.strip() == text)


WRAPS = [
    "para_model = model",
    "para_model = model.to(args.device)",
    "para_model = nn.DataParallel(model, dim=1).to(args.device)",
    "para_model = BalancedDataParallel(args.gpu0_bsz, model, dim=1)",
    "para_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.rank])",
    "model = nn.DataParallel(model)\n    para_model = model",
    BRANCHES,
]


@pytest.mark.parametrize("wrap", WRAPS)
def test_memories_rebuilt_under_no_grad_are_clean(wrap: str) -> None:
    source = MODEL + SCRIPT.replace("WRAP", wrap)
    assert findings_of(source, "ACC003") == []


@pytest.mark.parametrize("wrap", WRAPS)
def test_memories_that_keep_the_graph_are_reported(wrap: str) -> None:
    source = KEEPS_GRAPH + SCRIPT.replace("WRAP", wrap)
    [finding] = findings_of(source, "ACC003")
    assert finding.location.row == _row(source, "loss, mems = ret[0], ret[1:]")
    assert "`mems` carries this iteration's autograd graph" in finding.message


def test_a_wrapper_with_its_own_forward_hides_the_model() -> None:
    # A project wrapper that overrides forward runs its own code, not the model's: what the slice
    # holds is the wrapper's business, and the wrapper here returns the model's whole output.
    wrapper = """

class Wrapped(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args):
        return self.module(*args)
"""
    source = MODEL + wrapper + SCRIPT.replace("WRAP", "para_model = Wrapped(model)")
    [finding] = findings_of(source, "ACC003")
    assert finding.location.row == _row(source, "loss, mems = ret[0], ret[1:]")


def test_two_models_on_branches_are_out_of_sight() -> None:
    # `para_model` is one of two project models: which forward runs is not known, and the slice
    # of an output out of sight is read as the output itself (the classic `out, h = rnn(x, h)`).
    other = "\n\nclass Other(nn.Module):\n    def forward(self, data, target, *mems):\n        return [data.sum()]\n"
    wrap = "if args.other:\n        para_model = Other()\n    else:\n        para_model = model"
    source = MODEL + other + SCRIPT.replace("WRAP", wrap)
    assert [f.code for f in findings_of(source, "ACC003")] == ["ACC003"]


def test_the_tail_read_from_a_tuple_with_a_starred_run() -> None:
    source = (MODEL.replace("return [loss] + new_mems", "return (loss, *new_mems)")
              + SCRIPT.replace("WRAP", "para_model = model"))
    assert findings_of(source, "ACC003") == []
    undetached = KEEPS_GRAPH.replace("return [loss] + new_mems", "return (loss, *new_mems)") + SCRIPT.replace("WRAP", "para_model = model")
    assert [f.code for f in findings_of(undetached, "ACC003")] == ["ACC003"]


TRAINER = """
from torch import nn

from mem_transformer import MemTransformer


class Trainer:
    def __init__(self, args, optimizer):
        model = MemTransformer(args.n_layer)
        self.model = nn.DataParallel(model, dim=1)
        self.optimizer = optimizer
        self.mems = tuple()

    def train_step(self, data, target):
        ret = self.model(data, target, *self.mems)
        loss, self.mems = ret[0], ret[1:]
        loss.mean().backward()
        self.optimizer.step()
        self.optimizer.zero_grad()

    def fit(self, loader):
        for data, target in loader:
            self.train_step(data, target)
"""


def test_a_trainer_whose_wrapped_model_lives_in_another_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    model = tmp_path / "mem_transformer.py"
    model.write_text(MODEL)
    trainer = tmp_path / "trainer.py"
    trainer.write_text(TRAINER)
    assert findings_of(trainer.read_bytes(), "ACC003", path=str(trainer)) == []
    model.write_text(KEEPS_GRAPH)
    [finding] = findings_of(trainer.read_bytes(), "ACC003", path=str(trainer))
    assert finding.location.row == _row(TRAINER, "loss, self.mems = ret[0], ret[1:]")


RESTART = """    if args.restart:
        with open(args.checkpoint, "rb") as f:
            model = torch.load(f)
        model = model.float()
    else:
        model = MemTransformer(args.n_layer)
"""


def test_a_model_restored_on_a_resume_branch_is_the_one_built_on_the_other() -> None:
    # `torch.load` hands back the model the script saved: the class built on the other branch.
    script = SCRIPT.replace("    model = MemTransformer(args.n_layer)\n", RESTART).replace("WRAP", BRANCHES)
    assert "torch.load(f)" in script
    assert findings_of(MODEL + script, "ACC003") == []
    [finding] = findings_of(KEEPS_GRAPH + script, "ACC003")
    assert "`mems`" in finding.message
