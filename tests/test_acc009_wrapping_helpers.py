"""ACC009 where the DDP model comes from a project function whose every return is a wrapper
(`model = setup_model(model, rank)` with `return DDP(model, ...)`, or `model = DDP(model)` then
`return model`), whatever the function is called, in this module or another, in a script or a
trainer method. Clean twins: a function that may return the bare model, and a loop that uses
`no_sync()`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from snippets import findings, row

from tests.snippets import findings_of

HELPER = """
def setup_model(model, local_rank):
    model = model.cuda(local_rank)
    {body}
"""
DIRECT = "return DDP(model, device_ids=[local_rank])"
THROUGH_NAME = "model = DDP(model, device_ids=[local_rank])\n    return model"
MAYBE_BARE = "if local_rank >= 0:\n        return DDP(model, device_ids=[local_rank])\n    return model"

LOOP = """
def main(args, model, loader):
    model = setup_model(model, args.local_rank)
    optimizer = torch.optim.AdamW(model.parameters())
    for step, (x, y) in enumerate(loader):
        {forward}
        if (step + 1) % args.accum == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""
PLAIN = "loss = torch.nn.functional.cross_entropy(model(x), y) / args.accum\n        loss.backward()"
NO_SYNC = (
    "sync = (step + 1) % args.accum == 0 or step + 1 == len(loader)\n"
    "        with contextlib.nullcontext() if sync else model.no_sync():\n"
    "            loss = torch.nn.functional.cross_entropy(model(x), y) / args.accum\n"
    "            loss.backward()"
)

TRAINER = """
class Trainer:
    def __init__(self, model, args):
        self.args = args
        self.model = self._wrap(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def _wrap(self, model):
        return DDP(model.cuda(self.args.local_rank), device_ids=[self.args.local_rank])

    def train_epoch(self, loader):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(self.model(x), y) / self.args.accum
            loss.backward()
            if (step + 1) % self.args.accum == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

IMPORTS = "import contextlib\n\nimport torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


def _script(body: str, forward: str = PLAIN) -> str:
    return IMPORTS + textwrap.dedent(HELPER).replace("{body}", body) + textwrap.dedent(LOOP).replace("{forward}", forward)


def _acc009(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC009"]


@pytest.mark.parametrize("body", [DIRECT, THROUGH_NAME], ids=["return-ddp", "return-name"])
def test_a_helper_that_always_returns_a_wrapper(body):
    source = _script(body)
    assert _acc009(source) == [row(source, "loss.backward()")]


def test_a_helper_that_may_return_the_bare_model_is_silent():
    assert _acc009(_script(MAYBE_BARE)) == []


def test_no_sync_in_the_loop_is_clean():
    assert _acc009(_script(DIRECT, NO_SYNC)) == []


def test_a_trainer_method_that_wraps_its_model():
    source = IMPORTS + textwrap.dedent(TRAINER)
    assert _acc009(source) == [row(source, "loss.backward()")]


def test_the_helper_in_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "dist_utils.py").write_text(
        "from torch.nn.parallel import DistributedDataParallel as DDP\n" + textwrap.dedent(HELPER).replace("{body}", DIRECT))
    train = tmp_path / "train.py"
    train.write_text("import torch\nfrom dist_utils import setup_model\n" + textwrap.dedent(LOOP).replace("{forward}", PLAIN))
    found = findings_of(train.read_bytes(), path=str(train), select=("ACC009",))
    assert [f.location.row for f in found] == [row(train.read_text(), "loss.backward()")]
