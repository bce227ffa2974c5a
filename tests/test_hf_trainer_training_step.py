"""A project class built on transformers' Trainer that copies and edits its `train()` loop calls
`self.training_step(model, inputs)`, the library's forward and backward of one micro-batch. That
call is the loop's backward: a DDP model with no `no_sync()` (ACC009) and a step gated on `% k`
with no end-of-epoch clause (ACC005) are read as in a hand-written loop. Trainer-class and
multi-module forms (the Trainer base in another module); the twins are a class on another base,
where `training_step` is unknown, and a loop with the end-of-epoch clause."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings, row

LOOP = """
    def train(self, model, loader):
        model = torch.nn.parallel.DistributedDataParallel(model)
        for epoch in range(3):
            for step, inputs in enumerate(loader):
                tr_loss = self.training_step(model, inputs)
                if (step + 1) % self.args.gradient_accumulation_steps == 0{tail}:
                    self.optimizer.step()
                    model.zero_grad()
"""
TAIL = " or step + 1 == len(loader)"


def _trainer(base: str, tail: str = "") -> str:
    return f"import torch\nimport transformers\n\n\nclass MyTrainer({base}):" + LOOP.replace("{tail}", tail)


def _codes(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return [f for f in findings(source, path) if f[0] in {"ACC005", "ACC009"}]


def test_a_copied_trainer_loop_is_read_through_the_library_training_step():
    source = _trainer("transformers.Trainer")
    assert _codes(source) == [
        ("ACC005", row(source, "% self.args.gradient_accumulation_steps")),
        ("ACC009", row(source, "self.training_step(")),
    ]


def test_the_end_of_epoch_clause_keeps_the_last_window():
    assert [code for code, _ in _codes(_trainer("transformers.Trainer", TAIL))] == ["ACC009"]


def test_a_training_step_of_an_unknown_base_is_not_a_backward():
    assert _codes(_trainer("some_library.Runner")) == []


@pytest.mark.parametrize("base, expected", [("transformers.Trainer", {"ACC005", "ACC009"}), ("object", set())])
@pytest.mark.parametrize("package_init, imported_from", [
    ("", "pkg.base"),  # the base named in its own module
    ("from .base import HeadTrainer\n", "pkg"),  # re-exported by the package
])
def test_the_trainer_base_in_another_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base, expected, package_init, imported_from
):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(package_init)
    (tmp_path / "pkg" / "base.py").write_text(f"import transformers\n\n\nclass HeadTrainer({base}):\n    pass\n")
    driver = f"import torch\nfrom {imported_from} import HeadTrainer\n\n\nclass MyTrainer(HeadTrainer):" + LOOP.replace("{tail}", "")
    (tmp_path / "train.py").write_text(driver)
    monkeypatch.chdir(tmp_path)
    assert {code for code, _ in _codes(driver, "train.py")} == expected
