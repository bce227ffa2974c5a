"""ACC006 stays silent when the retained graph is shared by every iteration: the backward runs
through a value built once before the loop from a graph-carrying computation (`feats =
encoder(data)`, then `head(feats).sum().backward(retain_graph=True)` per iteration), or through
tensors handed in as `*inputs`. Without the flag the second iteration raises "Trying to backward
through the graph a second time". Script, trainer-class and multi-module forms, with twins where
each iteration builds its own graph (or the shared value is detached), which stay reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

from snippets import findings, row

from tests.snippets import findings_of

SCRIPT = """
import torch
from torch import nn

encoder = nn.Linear(8, 8)
head = nn.Linear(8, 1)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
data = torch.randn(4, 8)
{before}
for step in range(10):
    {inside}
    loss = head(feats).sum()
    loss.backward(retain_graph=True)
    optimizer.step()
    optimizer.zero_grad()
"""

TRAINER = """
import torch

class Prober:
    def __init__(self, encoder, head, data, optimizer):
        self.encoder = encoder
        self.head = head
        self.data = data
        self.optimizer = optimizer

    def fit(self, steps):
        {before}
        for _ in range(steps):
            {inside}
            loss = self.head(features).pow(2).mean()
            loss.backward(retain_graph=True)
            self.optimizer.step()
            self.optimizer.zero_grad()
"""


def _acc006(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC006"]


def _fill(template: str, before: str, inside: str) -> str:
    return textwrap.dedent(template).replace("{before}", before).replace("{inside}", inside)


def test_features_computed_once_before_the_loop_need_the_graph():
    assert _acc006(_fill(SCRIPT, "feats = encoder(data)", "pass")) == []


def test_features_computed_in_each_iteration_do_not():
    source = _fill(SCRIPT, "pass", "feats = encoder(data)")
    assert _acc006(source) == [row(source, "retain_graph=True")]


def test_detached_features_before_the_loop_do_not():
    source = _fill(SCRIPT, "feats = encoder(data).detach()", "pass")
    assert _acc006(source) == [row(source, "retain_graph=True")]


def test_trainer_features_of_the_encoder_before_the_loop():
    assert _acc006(_fill(TRAINER, "features = self.encoder(self.data)", "pass")) == []
    source = _fill(TRAINER, "pass", "features = self.encoder(self.data)")
    assert _acc006(source) == [row(source, "retain_graph=True")]


def test_tensors_handed_in_as_star_inputs_may_carry_a_graph():
    source = """
        import torch

        def time_backward(fn, *inputs, repeats=10):
            for _ in range(repeats):
                out = fn(*inputs)
                out.sum().backward(retain_graph=True)
    """
    assert _acc006(source) == []
    fresh = """
        import torch

        def time_backward(fn, loader):
            for batch in loader:
                out = fn(batch)
                out.sum().backward(retain_graph=True)
    """
    assert _acc006(fresh) == [row(fresh, "retain_graph=True")]


def test_features_from_a_helper_of_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "features.py").write_text("def extract(encoder, data):\n    return encoder(data)\n")
    path = tmp_path / "probe.py"
    shared = "from features import extract\n" + _fill(SCRIPT, "feats = extract(encoder, data)", "pass")
    under_no_grad = "from features import extract\n" + _fill(
        SCRIPT, "with torch.no_grad():\n    feats = extract(encoder, data)", "pass")
    for script, expected in ((shared, []), (under_no_grad, [row(under_no_grad, "retain_graph=True")])):
        path.write_text(script)
        found = findings_of(path.read_bytes(), path=str(path), select=("ACC006",))
        assert [f.location.row for f in found] == expected, script


def test_objects_built_before_the_loop_are_not_shared_graphs():
    """A loss object or the model handed to a loss helper is built before the loop too, but it
    is no tensor: the finding stays."""
    source = """
        import torch
        from torch import nn

        class physics_loss(nn.Module):
            def forward(self, out):
                return out.pow(2).mean()

        def penalty(model):
            return sum(p.pow(2).sum() for p in model.parameters())

        def physics(out, residual):
            return residual(out)

        def train(model, n_iters):
            optimizer = torch.optim.Adam(model.parameters())
            criterion = nn.MSELoss()
            residual = physics_loss()
            for _ in range(n_iters):
                optimizer.zero_grad()
                out = model()
                loss = criterion(out, torch.zeros_like(out)) + physics(out, residual) + penalty(model)
                loss.backward(retain_graph=True)
                optimizer.step()
    """
    assert _acc006(source) == [row(source, "retain_graph=True")]


def test_leaf_tensors_made_before_the_loop_hold_no_graph():
    source = """
        import torch
        import torch.nn.functional as F

        x = torch.arange(0.0, 1.1, 0.1)
        y = x * 0.5 + 1.0
        w = torch.randn(1, requires_grad=True)
        b = torch.zeros(1).requires_grad_()
        opt = torch.optim.Adam([w, b])
        for i in range(1000):
            opt.zero_grad()
            loss = F.mse_loss(x * w + b, y)
            loss.backward(retain_graph=True)
            opt.step()
    """
    assert _acc006(source) == [row(source, "retain_graph=True")]
