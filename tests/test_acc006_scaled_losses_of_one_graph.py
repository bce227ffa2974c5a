"""ACC006 reads a loop over losses of one graph the same whether each pass backs the loss itself or
a scaled copy of it (`(loss / k).backward(retain_graph=True)`, `accelerator.backward(loss / k,
retain_graph=True)`): the next pass runs through the shared graph, so the finding says to sum the
losses and offers no removal of `retain_graph`, which would make that next pass fail. A per-loss
gradient read between the passes is not the bug; a fresh forward per pass still gets the removal.
Forms: a script, a trainer class, and the losses built by a model in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint.engine import fix_source
from tests.snippets import findings_of

SCRIPT = """
def train(model, criteria, optimizer, loader, k):
    for x, y in loader:
        out = model(x)
        losses = [crit(out, y) for crit in criteria]
        for loss in losses:
            (loss / k).backward(retain_graph=True)BETWEEN
        optimizer.step()
        optimizer.zero_grad()
"""

TRAINER = """
from contextlib import nullcontext


class Trainer:
    def __init__(self, accelerator, codec, optim, dl, grad_accum_every):
        self.accelerator = accelerator
        self.codec = codec
        self.optim = optim
        self.dl_iter = iter(dl)
        self.grad_accum_every = grad_accum_every

    def train_step(self):
        self.optim.zero_grad()
        for i in range(self.grad_accum_every):
            wave, = next(self.dl_iter)
            with self.accelerator.autocast(), nullcontext():
                losses = self.codec(wave, return_losses_separately=True)
                for name, loss in losses:
                    self.accelerator.backward(loss * 0.5 / self.grad_accum_every, retain_graph=True)BETWEEN
        self.optim.step()
"""

GRAD_READ = "\n                    self.norms[name] = self.codec.weight.grad.norm().item()"

FRESH = """
def train(model, optimizer, loader, k):
    for batches in loader:
        for x in batches:
            loss = model(x)
            (loss / k).backward(retain_graph=True)
        optimizer.step()
        optimizer.zero_grad()
"""


def _acc006(text: str, path: str = "train.py"):
    return findings_of(textwrap.dedent(text).lstrip(), path=path, select=("ACC006",))


def test_script_loop_over_divided_losses_says_sum_and_offers_no_removal():
    source = SCRIPT.replace("BETWEEN", "")
    [finding] = _acc006(source)
    assert "summed losses" in finding.message
    assert fix_source(textwrap.dedent(source).lstrip(), "train.py", unsafe_fixes=True).fixed_source is None


def test_script_gradient_read_between_passes_is_clean():
    between = "\n            grads.append(model.weight.grad.clone())"
    assert _acc006(SCRIPT.replace("BETWEEN", between)) == []


def test_trainer_accelerator_backward_of_scaled_losses():
    source = TRAINER.replace("BETWEEN", "")
    [finding] = _acc006(source)
    assert "summed losses" in finding.message and "no later backward" not in finding.message
    assert fix_source(textwrap.dedent(source).lstrip(), "train.py", unsafe_fixes=True).fixed_source is None
    assert _acc006(TRAINER.replace("BETWEEN", GRAD_READ)) == []


def test_fresh_forward_per_pass_keeps_the_removal():
    [finding] = _acc006(FRESH)
    assert "no later backward" in finding.message
    fixed = fix_source(textwrap.dedent(FRESH).lstrip(), "train.py", unsafe_fixes=True).fixed_source
    assert fixed is not None and "retain_graph" not in fixed


def test_losses_from_a_model_in_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "codec.py").write_text(textwrap.dedent("""
        from torch import nn


        class Codec(nn.Module):
            def forward(self, wave, return_losses_separately=False):
                recon = self.decoder(self.encoder(wave))
                losses = [("recon", (recon - wave).abs().mean()), ("l2", (recon - wave).pow(2).mean())]
                return losses
    """).lstrip())
    trainer = (
        TRAINER.replace("from contextlib", "from codec import Codec\nfrom contextlib")
        .replace("self.codec = codec", "self.codec = Codec()")
    )
    path = tmp_path / "train.py"
    for between, expected in (("", 1), (GRAD_READ, 0)):
        path.write_text(textwrap.dedent(trainer.replace("BETWEEN", between)).lstrip())
        found = findings_of(path.read_bytes(), path=str(path), select=("ACC006",))
        assert len(found) == expected, between
        assert all("summed losses" in f.message for f in found)
