"""ACC014: an optimizer built anew every iteration over the parameters of a model made before the
loop is no fresh start. Gradients live on the parameters, so each step still applies the sum of
all earlier gradients. Script, trainer-class and multi-module forms; the twins re-create the model
too, build the optimizer from something the code does not show, or zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from rule_cases import RuleCases, src

CASES = RuleCases("ACC014")
found, marked, assert_clean = CASES.found, CASES.marked, CASES.assert_clean

SCRIPT = src("""
    import torch

    model = torch.nn.Linear(5, 1)
    for _ in range(5):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loss = model(torch.randn(10, 5)).sum()
        loss.backward()
        optimizer.step()  # <ACC014
""")

TRAINER = src("""
    import torch


    class Trainer:
        def __init__(self, model):
            self.model = model

        def fit(self, loader):
            for x in loader:
                opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
                self.model(x).mean().backward()
                opt.step()  # <ACC014
""")


def test_a_new_optimizer_over_an_old_model_is_reported():
    findings = found(SCRIPT)
    assert {f.location.row for f in findings} == marked(SCRIPT)
    assert findings[0].fix is not None


def test_a_trainer_method_building_its_optimizer_every_iteration():
    assert {f.location.row for f in found(TRAINER)} == marked(TRAINER)


def test_the_model_made_anew_too_is_a_fresh_start():
    assert_clean(src("""
        import torch

        for _ in range(5):
            model = torch.nn.Linear(5, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            model(torch.randn(10, 5)).sum().backward()
            optimizer.step()
    """))


def test_an_optimizer_built_from_what_the_code_does_not_show_stays_silent():
    assert_clean(src("""
        for _ in range(5):
            optimizer = build_optimizer(cfg)
            model(x).sum().backward()
            optimizer.step()
    """))


def test_zeroing_the_model_keeps_it_clean():
    assert_clean(src("""
        import torch

        model = torch.nn.Linear(5, 1)
        for _ in range(5):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            model.zero_grad()
            model(torch.randn(10, 5)).sum().backward()
            optimizer.step()
    """))


@pytest.mark.parametrize("model_line, expected", [("", 1), ("        model = make_model()\n", 0)])
def test_the_optimizer_factory_in_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_line, expected):
    (tmp_path / "optim_utils.py").write_text(
        "import torch\n\n\ndef make_optimizer(net, lr):\n    return torch.optim.SGD(net.parameters(), lr=lr)\n"
    )
    driver = (
        "from optim_utils import make_optimizer\n\n\ndef train(model, loader):\n    for x in loader:\n"
        + model_line
        + "        optimizer = make_optimizer(model, 0.1)\n"
        "        model(x).sum().backward()\n"
        "        optimizer.step()\n"
    )
    (tmp_path / "train.py").write_text(driver)
    monkeypatch.chdir(tmp_path)
    assert len(found(driver, "train.py")) == expected
