"""ACC006 stays silent when the repeated backward runs through a tensor every iteration of its
loop shares, also where that loop sits inside another (`for layer in layers:` builds the target,
then `for step in range(n):` fits it with `backward(retain_graph=True)`), and where the shared
tensor became part of a graph by an in-place write before the loop (`target[i, idx] += resid[i]`,
`resid` from a project function that may carry a graph): the next step's backward runs through
it again. Twins detach what is written (or the features) and stay reported.
Forms: a script function, a trainer class, and the residual made in another module."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


FEATURES = """
import torch


def fit(encoder, head, layers, x, n):
    for layer in layers:
        feats = encoder(x)FEATS
        optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
        for step in range(n):
            optimizer.zero_grad()
            loss = head(feats).pow(2).mean()
            loss.backward(retain_graph=True)
            optimizer.step()
"""

EDITOR = """
import torch
from torch import nn


class Editor:
    def __init__(self, hparams):
        self.hparams = hparams

    def edit(self, layers, keys, idxs, targets):
        criterion = nn.MSELoss()
        for i, layer in enumerate(layers):
            out_ks = torch.load(self.hparams.cache)[i]
            resid = compute_resid(targets, i)
            for j in range(len(idxs)):
                out_ks[j, idxs[j]] += resid[j]WRITE
            optimizer = torch.optim.AdamW(layer.parameters(), lr=self.hparams.lr)
            for step in range(self.hparams.steps):
                optimizer.zero_grad()
                loss = criterion(layer(keys), out_ks)
                loss.backward(retain_graph=True)
                optimizer.step()
"""
RESID = "\n\ndef compute_resid(targets, i):\n    return targets.cumsum(0) / (i + 1)\n"


def _acc006(source: str, **parts: str) -> int:
    text = textwrap.dedent(source)
    for key, value in parts.items():
        text = text.replace(key, value)
    return len(findings_of(text.encode(), path="edit.py", select=("ACC006",)))


def test_features_built_before_the_inner_loop():
    assert _acc006(FEATURES, FEATS="") == 0
    assert _acc006(FEATURES, FEATS=".detach()") == 1


def test_target_written_in_place_before_the_loop():
    assert _acc006(EDITOR + RESID, WRITE="") == 0
    assert _acc006(EDITOR + RESID, WRITE=".detach()") == 1


def test_residual_from_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "residuals.py").write_text(RESID.lstrip())
    path = tmp_path / "edit.py"
    for write, expected in (("", 0), (".detach()", 1)):
        path.write_text("from residuals import compute_resid\n" + textwrap.dedent(EDITOR).replace("WRITE", write))
        assert len(findings_of(path.read_bytes(), path=str(path), select=("ACC006",))) == expected, write
