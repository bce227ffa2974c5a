"""ACC009 and a local name bound to a DDP model wrapped in sight: a trainer's `fit()` wraps
`self.encoder = DDP(self.encoder)` and calls `self.train()`, which runs its micro-steps on
`encoder = self.encoder` (maybe wrapped again in DataParallel, which keeps the DDP inside and its
all-reduce on every backward). The local name is the DDP model. A name that may also hold
something else (`encoder = self.encoder if ... else other`), or a loop that syncs only at the
last micro-step, stays silent. Script and trainer-class forms."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

TRAINER = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, encoder, optimizer, accum):
        self.encoder = encoder
        self.optimizer, self.accum = optimizer, accum

    def fit(self, loader, rank):
        self.encoder = DDP(self.encoder, device_ids=[rank])
        return self.train(loader)

    def train(self, loader):
        encoder = {alias}
        {rewrap}
        for step, (x, y) in enumerate(loader):
            {forward}
                loss = torch.nn.functional.mse_loss(encoder(x), y) / self.accum
                loss.backward()
            if (step + 1) % self.accum == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

SCRIPT = """
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, optimizer, accum, rank, other):
    ddp_net = DDP(net, device_ids=[rank])
    encoder = {alias}
    {rewrap}
    for step, (x, y) in enumerate(loader):
        {forward}
            loss = torch.nn.functional.mse_loss(encoder(x), y) / accum
            loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

FORMS = [(TRAINER, "self.encoder"), (SCRIPT, "ddp_net")]
ALWAYS = "if True:"
NO_SYNC_UNTIL_LAST = "with (encoder.no_sync() if (step + 1) % {k} else contextlib.nullcontext()):"
REWRAP = "if torch.cuda.device_count() > 1:\n{i}    encoder = torch.nn.DataParallel(encoder)"


def acc009(source: str) -> list:
    return findings_of(source, "ACC009", path="case.py", dedent=True)


def _indent(form: str) -> str:
    return " " * (8 if form is TRAINER else 4)


@pytest.mark.parametrize("form, wrapped", FORMS)
@pytest.mark.parametrize("rewrap", [False, True])
def test_a_local_alias_of_the_ddp_model_reduces_every_micro_step(form, wrapped, rewrap):
    source = form.format(
        alias=wrapped, rewrap=REWRAP.format(i=_indent(form)) if rewrap else "pass", forward=ALWAYS,
    )
    [finding] = acc009(source)
    assert "every micro-step" in finding.message and "`encoder.no_sync()`" in finding.message


@pytest.mark.parametrize("form, wrapped", FORMS)
def test_an_alias_that_syncs_only_at_the_last_micro_step_is_silent(form, wrapped):
    k = "self.accum" if form is TRAINER else "accum"
    source = "import contextlib\n" + form.format(alias=wrapped, rewrap="pass", forward=NO_SYNC_UNTIL_LAST.format(k=k))
    assert acc009(source) == []


@pytest.mark.parametrize("form, wrapped", FORMS)
def test_a_name_that_may_hold_another_model_is_silent(form, wrapped):
    other = "self.optimizer" if form is TRAINER else "other"
    source = form.format(alias=f"{wrapped} if torch.distributed.is_initialized() else {other}", rewrap="pass", forward=ALWAYS)
    assert acc009(source) == []


def test_a_local_name_bound_to_a_bare_attribute_is_silent():
    """No method of the class wraps `self.encoder`: the alias is the bare model."""
    source = TRAINER.format(alias="self.encoder", rewrap="pass", forward=ALWAYS).replace(
        "DDP(self.encoder, device_ids=[rank])", "self.encoder.to(rank)"
    )
    assert acc009(source) == []
