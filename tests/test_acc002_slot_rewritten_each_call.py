"""ACC002 and a method called on every iteration that stores losses on the object under keys
made from a loop of its own (`for name in self.heads: self.losses["GAN_" + name] = ...`): each
call writes the same slots anew, so the dict cannot grow across calls (a GAN trainer's
per-discriminator losses). Twins still reported: the slot added to (`+=`), and a key that changes
from call to call (`self.history[self.step] = ...`). Forms: the method in the trainer's own
module, and in a base class in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

METHOD = """
    def get_dis_losses(self, net_d_output):
        self.dis_losses = {} if self.dis_losses is None else self.dis_losses
        for name in self.heads:
            STORE
"""

LOOP = """
    def train(self, loader):
        self.step = 0
        for x in loader:
            out = self.net_d(x)
            self.get_dis_losses(out)
            total = sum(v.mean() for v in out.values())
            self.opt_d.zero_grad()
            total.backward()
            self.opt_d.step()
            self.step += 1
"""

INIT = """
    def __init__(self, net_d, opt_d, heads):
        self.net_d = net_d
        self.opt_d = opt_d
        self.heads = heads
        self.dis_losses = None
        self.history = {}
"""

REWRITTEN = 'self.dis_losses["GAN_" + name] = self.gan_loss(net_d_output[name])'
ADDED = 'self.dis_losses["GAN_" + name] += self.gan_loss(net_d_output[name])'
GROWING = "self.history[self.step] = self.gan_loss(net_d_output[name])"

GAN_LOSS = """
    def gan_loss(self, output):
        return output.mean()
"""


def _trainer(store: str) -> str:
    return "class Trainer:\n" + INIT + METHOD.replace("STORE", store) + GAN_LOSS + LOOP


def _acc002(source: str) -> list:
    return [f for f in check_source(source.encode(), "trainer.py").findings if f.code == "ACC002"]


def test_slots_written_anew_on_every_call_are_clean() -> None:
    assert _acc002(_trainer(REWRITTEN)) == []


def test_slots_over_a_range_of_a_setting_are_clean() -> None:
    source = _trainer(REWRITTEN.replace('"GAN_" + name', '"GAN_T%d" % name')).replace(
        "for name in self.heads:", "for name in range(self.num_scales):")
    assert _acc002(source) == []


@pytest.mark.parametrize("store", [ADDED, GROWING], ids=["added-to", "key-changes-per-call"])
def test_slots_that_grow_across_calls_are_reported(store: str) -> None:
    [finding] = _acc002(_trainer(store))
    assert "lives on the object" in finding.message


def test_the_method_in_a_base_class_of_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = "class BaseTrainer:\n" + INIT + METHOD.replace("STORE", REWRITTEN) + GAN_LOSS
    (tmp_path / "base.py").write_text(base)
    trainer = "from base import BaseTrainer\n\n\nclass Trainer(BaseTrainer):\n" + LOOP
    (tmp_path / "trainer.py").write_text(trainer)
    monkeypatch.chdir(tmp_path)
    assert findings_of(trainer.encode(), "ACC002", path="trainer.py") == []


PER_SAMPLE = """
class Trainer:
    def __init__(self, net, opt):
        self.net = net
        self.opt = opt
        self.sample_losses = {}

    def record(self, ids, losses):
        for i, sid in enumerate(ids):
            self.sample_losses[sid] = losses[i]

    def train(self, loader):
        for x, y, ids in loader:
            losses = self.net(x, y)
            self.record(ids, losses)
            loss = losses.mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""


def test_slots_keyed_by_the_batch_grow_across_calls() -> None:
    [finding] = _acc002(PER_SAMPLE)
    assert finding.location.row == PER_SAMPLE.splitlines().index("            self.sample_losses[sid] = losses[i]") + 1


SAME_DICT_GROWING = "self.dis_losses[self.step] = self.gan_loss(net_d_output['all'])"


def test_the_finding_lands_on_the_slot_that_grows() -> None:
    source = _trainer(REWRITTEN + "\n        " + SAME_DICT_GROWING)
    [finding] = _acc002(source)
    assert finding.location.row == source.splitlines().index("        " + SAME_DICT_GROWING) + 1
