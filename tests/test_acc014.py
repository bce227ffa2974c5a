"""ACC014 gradients-never-cleared: backward and step in a loop with no zeroing reached anywhere.

Positive and negative cases in script, trainer-class and multi-module form. Clearing by hand
(`p.grad = None`, `p.grad.zero_()`), in a helper, in a method, in another module of the project or by
a framework counts as clearing: those loops stay clean (the peer tool's false alarms). Every fix is
checked: the fixed text compiles, has no ACC014 finding left, fixing again changes nothing, and every
original line is still there, in order, with only the inserted `zero_grad()` lines added."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from accumlint.engine import check_source, fix_source
from rule_cases import RuleCases, src

SELECT = {"ACC014"}

CASES = RuleCases("ACC014")
_src = src
found, marked, assert_clean = CASES.found, CASES.marked, CASES.assert_clean


def rows(source: str, filename: str = "case.py") -> set[int]:
    return {f.location.row for f in found(source, filename)}


def assert_fix(source: str, inserted: list[str], filename: str = "case.py", left: int = 0) -> str:
    """The fix compiles, removes its findings (`left` report-only ones may stay), is idempotent and
    adds exactly `inserted`."""
    before = found(source, filename)
    once = fix_source(source, filename, select=SELECT)
    assert once.error is None, once.error
    fixed = once.fixed_source
    assert fixed is not None, "no fix applied"
    compile(fixed, filename, "exec")
    assert len(once.findings) == left
    assert all(f.fix is None for f in once.findings)
    assert {f.location.row for f in once.findings} <= {f.location.row for f in before if f.fix is None}
    assert len(found(fixed, filename)) == left
    twice = fix_source(fixed, filename, select=SELECT)
    assert twice.error is None and twice.fixed_source is None
    # Other lines unchanged: removing the inserted lines gives back the original.
    old, new = source.splitlines(), fixed.splitlines()
    added = [line for line in new if line not in old]
    assert [line.strip() for line in added] == inserted
    assert [line for line in new if line in old] == old
    return fixed


def assert_report_only(source: str, filename: str = "case.py") -> None:
    findings = found(source, filename)
    assert findings and all(f.fix is None for f in findings)
    assert fix_source(source, filename, select=SELECT, unsafe_fixes=True).fixed_source is None


# --- script positives ------------------------------------------------------------------------------

PLAIN = _src("""
    import torch

    model = torch.nn.Linear(10, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.25)
    for i in range(10):
        inp = torch.rand(20, 10)
        output = model(inp)
        output.sum().backward()
        optimizer.step()  # <ACC014
        print(f"iter {i} completed")
""")


def test_plain_loop_without_zeroing_is_reported_on_the_step():
    findings = found(PLAIN)
    assert {f.location.row for f in findings} == marked(PLAIN)
    assert findings[0].location.column == 5
    assert "sum of all earlier gradients" in findings[0].message
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"


def test_plain_loop_fix():
    fixed = assert_fix(PLAIN, ["optimizer.zero_grad()"])
    assert "    optimizer.step()  # <ACC014\n    optimizer.zero_grad()\n" in fixed


def test_zeroing_before_the_loop_only_is_the_bug():
    source = _src("""
        def train(model, optimizer, loader, criterion):
            optimizer.zero_grad()
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()  # <ACC014
    """)
    findings = found(source)
    assert {f.location.row for f in findings} == marked(source)
    assert "zeroed before the loop, never between its steps" in findings[0].message
    assert_fix(source, ["optimizer.zero_grad()"])


def test_zeroing_per_epoch_while_the_batch_loop_steps():
    source = _src("""
        for epoch in range(epochs):
            optimizer.zero_grad()
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()  # <ACC014
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["optimizer.zero_grad()"])


def test_gated_step_never_resets_its_window():
    source = _src("""
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()  # <ACC014
                scheduler.step()
    """)
    assert rows(source) == marked(source)
    fixed = assert_fix(source, ["optimizer.zero_grad()"])
    assert "        optimizer.step()  # <ACC014\n        optimizer.zero_grad()\n        scheduler.step()" in fixed


def test_scaler_step_zeroes_the_optimizer_it_steps():
    source = _src("""
        scaler = torch.cuda.amp.GradScaler()
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)  # <ACC014
            scaler.update()
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["opt.zero_grad()"])


def test_step_on_two_branches_gets_both_fixes_at_once():
    source = _src("""
        for x, y in loader:
            loss = criterion(model(x), y)
            if use_amp:
                scaler.scale(loss).backward()
                scaler.step(optimizer)  # <ACC014
                scaler.update()
            else:
                loss.backward()
                optimizer.step()  # <ACC014
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["optimizer.zero_grad()", "optimizer.zero_grad()"])


def test_accelerate_accumulate_does_not_zero_by_itself():
    source = _src("""
        from accelerate import Accelerator

        accelerator = Accelerator(gradient_accumulation_steps=4)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()  # <ACC014
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["optimizer.zero_grad()"])


def test_fabric_does_not_zero_by_itself():
    source = _src("""
        import lightning as L

        fabric = L.Fabric()
        model, optimizer = fabric.setup(model, optimizer)
        for batch in loader:
            loss = model(batch).mean()
            fabric.backward(loss)
            optimizer.step()  # <ACC014
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["optimizer.zero_grad()"])


def test_grad_read_before_the_step_keeps_the_fix():
    source = _src("""
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            biggest = max(p.grad.abs().max() for p in model.parameters())
            optimizer.step()  # <ACC014
            print(norm, biggest)
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["optimizer.zero_grad()"])


def test_two_optimizers_are_reported_without_a_fix():
    source = _src("""
        for real in loader:
            d_loss = discriminator_loss(netD, netG, real)
            d_loss.backward()
            opt_d.step()  # <ACC014
            g_loss = generator_loss(netD, netG)
            g_loss.backward()
            opt_g.step()  # <ACC014
    """)
    assert rows(source) == marked(source)
    assert_report_only(source)


def test_grad_read_after_the_step_gets_no_fix():
    source = _src("""
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()  # <ACC014
            grad_norm = sum(p.grad.norm() for p in model.parameters())
            log(grad_norm)
    """)
    assert rows(source) == marked(source)
    assert_report_only(source)


def test_grad_read_in_a_function_called_after_the_step_gets_no_fix():
    source = _src("""
        def log_grads(model):
            for name, p in model.named_parameters():
                print(name, p.grad.abs().mean())

        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()  # <ACC014
            log_grads(model)
    """)
    assert rows(source) == marked(source)
    assert_report_only(source)


def test_step_inside_a_helper_is_reported_at_the_call_and_named():
    source = _src("""
        def train_step(model, opt, batch):
            loss = model(batch).mean()
            loss.backward()
            opt.step()

        for batch in loader:
            train_step(model, optimizer, batch)  # <ACC014
    """)
    findings = found(source)
    assert {f.location.row for f in findings} == marked(source)
    assert "`train_step()`" in findings[0].message
    assert_report_only(source)


def test_step_on_a_line_shared_with_its_guard_gets_no_fix():
    source = _src("""
        for x, y in loader:
            criterion(model(x), y).backward()
            if ready: optimizer.step()  # <ACC014
    """)
    assert rows(source) == marked(source)
    assert_report_only(source)


# --- script negatives: every form of clearing counts -------------------------------------------------


@pytest.mark.parametrize("clearing", [
    "optimizer.zero_grad()",
    "optimizer.zero_grad(set_to_none=True)",
    "model.zero_grad()",
    "model.zero_grad(set_to_none=True)",
    "for p in model.parameters():\n        p.grad = None",
    "for p in model.parameters():\n        if p.grad is not None:\n            p.grad.zero_()",
    "for p in model.parameters():\n        if p.grad is not None:\n            p.grad.detach_()\n            p.grad.zero_()",
    "for p in params:\n        p.grad.data.zero_()",
    "for p in params:\n        setattr(p, 'grad', None)",
    "[p.grad.zero_() for p in params]",
    "params[0].grad = None",
    "for p in params:\n        del p.grad",
    "torch.optim.Optimizer.zero_grad(optimizer)",
])
def test_clearing_by_hand_counts(clearing):
    body = textwrap.indent(clearing, "    ")
    source = (
        "for x, y in loader:\n"
        "    loss = criterion(model(x), y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        f"{body}\n"
    )
    assert_clean(source)


def test_clearing_before_backward_counts():
    assert_clean(_src("""
        for x, y in loader:
            for p in model.parameters():
                p.grad = None
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """))


def test_zeroing_helper_in_the_module_counts():
    assert_clean(_src("""
        def clear_grads(model):
            for p in model.parameters():
                p.grad = None

        def reset(opt):
            opt.zero_grad(set_to_none=True)

        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            clear_grads(model)

        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            reset(optimizer)
    """))


def test_zeroing_in_a_closure_called_from_the_loop_counts():
    assert_clean(_src("""
        def train(model, optimizer, loader):
            def after_step():
                optimizer.zero_grad()

            for x in loader:
                model(x).sum().backward()
                optimizer.step()
                after_step()
    """))


def test_unknown_helper_named_for_clearing_counts():
    assert_clean(_src("""
        from mylib import zero_grads

        for x in loader:
            model(x).sum().backward()
            optimizer.step()
            zero_grads(model)
    """))


def test_window_start_zeroing_counts():
    assert_clean(_src("""
        for i, (x, y) in enumerate(loader):
            if i % accum_steps == 0:
                optimizer.zero_grad()
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0:
                optimizer.step()
    """))


def test_deepspeed_engine_step_zeroes():
    assert_clean(_src("""
        import deepspeed

        model_engine, optimizer, loader, _ = deepspeed.initialize(model=model, config=cfg)
        for batch in loader:
            loss = model_engine(batch)
            model_engine.backward(loss)
            model_engine.step()
    """))


def test_lightning_automatic_optimisation_zeroes():
    assert_clean(_src("""
        import lightning as L

        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.model(batch).mean()
                return loss
    """))


def test_lightning_manual_optimisation_with_zeroing_is_clean():
    assert_clean(_src("""
        import lightning as L

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                opt.zero_grad()
                loss = self.model(batch).mean()
                self.manual_backward(loss)
                opt.step()
    """))


def test_lightning_manual_optimisation_without_zeroing():
    source = _src("""
        import lightning as L

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                loss = self.model(batch).mean()
                self.manual_backward(loss)
                opt.step()  # <ACC014
                return loss
    """)
    assert rows(source) == marked(source)
    assert_fix(source, ["opt.zero_grad()"])


def test_a_loop_that_breaks_after_its_first_step():
    assert_clean(_src("""
        for x in loader:
            model(x).sum().backward()
            optimizer.step()
            break
    """))


def test_optimizer_recreated_every_iteration():
    assert_clean(_src("""
        for trial in range(trials):
            model = Net()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
    """))


def test_model_recreated_every_iteration_under_an_outer_optimizer():
    assert_clean(_src("""
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            model = copy.deepcopy(base)
            model(x).sum().backward()
            optimizer.step()
    """))


def test_one_step_per_optimizer_over_a_list_of_them():
    assert_clean(_src("""
        for model, opt in zip(models, optimizers):
            model(x).sum().backward()
            opt.step()
    """))


def test_closure_optimizer_zeroes_in_its_closure():
    assert_clean(_src("""
        optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8)
        for i in range(steps):
            def closure():
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                return loss
            optimizer.step(closure)
    """))
    assert_clean(_src("""
        for i in range(steps):
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step(closure=make_closure(model))
    """))


def test_distributed_optimizer_keeps_gradients_in_a_fresh_context():
    assert_clean(_src("""
        import torch.distributed.autograd as dist_autograd
        from torch.distributed.optim import DistributedOptimizer

        opt = DistributedOptimizer(optim.SGD, params, lr=0.05)
        for data, target in loader:
            with dist_autograd.context() as context_id:
                loss = criterion(model(data), target)
                dist_autograd.backward(context_id, [loss])
                opt.step(context_id)
    """))


def test_a_loop_in_form_only():
    assert_clean(_src("""
        for _ in range(1):
            model(x).sum().backward()
            optimizer.step()
    """))


def test_backward_and_step_not_in_one_loop():
    assert_clean(_src("""
        for x in loader:
            model(x).sum().backward()
        optimizer.step()
    """))


# --- trainer classes ---------------------------------------------------------------------------------

TRAINER_ZEROES_IN_A_METHOD = _src("""
    class Trainer:
        def __init__(self, model, optimizer, loader):
            self.model = model
            self.optimizer = optimizer
            self.loader = loader

        def _run_batch(self, source, targets):
            self.optimizer.zero_grad()
            output = self.model(source)
            loss = F.cross_entropy(output, targets)
            loss.backward()
            self.optimizer.step()

        def _run_epoch(self):
            for source, targets in self.loader:
                self._run_batch(source, targets)

        def _clear(self):
            for p in self.model.parameters():
                p.grad = None

        def train_by_hand(self):
            for source, targets in self.loader:
                loss = F.cross_entropy(self.model(source), targets)
                loss.backward()
                self.optimizer.step()
                self._clear()
""")


def test_trainer_zeroing_in_a_method_is_clean():
    assert_clean(TRAINER_ZEROES_IN_A_METHOD)


def test_trainer_zeroing_through_an_inherited_method_is_clean():
    assert_clean(_src("""
        class Base:
            def zero(self):
                self.optimizer.zero_grad(set_to_none=True)

        class Trainer(Base):
            def fit(self):
                for batch in self.loader:
                    self.model(batch).mean().backward()
                    self.optimizer.step()
                    self.zero()
    """))


TRAINER_NEVER_ZEROES = _src("""
    class Trainer:
        def _run_batch(self, source, targets):
            output = self.model(source)
            loss = F.cross_entropy(output, targets)
            loss.backward()
            self.optimizer.step()

        def _run_epoch(self):
            for source, targets in self.loader:
                self._run_batch(source, targets)  # <ACC014

        def fit(self):
            for batch in self.loader:
                loss = self.model(batch).mean()
                loss.backward()
                self.optimizer.step()  # <ACC014
                self.scheduler.step()
""")


def test_trainer_that_never_zeroes():
    findings = found(TRAINER_NEVER_ZEROES)
    assert {f.location.row for f in findings} == marked(TRAINER_NEVER_ZEROES)
    helper = [f for f in findings if "_run_batch" in f.message]
    assert helper and helper[0].fix is None


def test_trainer_fix_zeroes_the_attribute_optimizer():
    # The helper's finding has no fix and stays.
    fixed = assert_fix(TRAINER_NEVER_ZEROES, ["self.optimizer.zero_grad()"], left=1)
    assert "            self.optimizer.step()  # <ACC014\n            self.optimizer.zero_grad()\n" in fixed
    result = check_source(fixed, "case.py", select=SELECT)
    assert [f.location.row for f in result.findings] == [10]


def test_trainer_with_a_library_base_method_left_unknown_is_still_judged_on_what_it_shows():
    # `self.log` resolves nowhere and says nothing about gradients: the loop is reported.
    source = _src("""
        class Trainer(SomeLibraryBase):
            def fit(self):
                for batch in self.loader:
                    loss = self.model(batch).mean()
                    loss.backward()
                    self.optimizer.step()  # <ACC014
                    self.log("loss", loss)
    """)
    assert rows(source) == marked(source)


# --- projects of several modules ----------------------------------------------------------------------


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_src(text))
    return tmp_path


TRAIN = """
    from utils import {name}

    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        {name}({arg})
"""


@pytest.mark.parametrize("helper, arg", [
    ("def clear(model):\n    for p in model.parameters():\n        p.grad = None\n", "model"),
    ("def clear(opt):\n    opt.zero_grad()\n", "optimizer"),
    ("def clear(model):\n    _inner(model)\n\n\ndef _inner(model):\n    model.zero_grad(set_to_none=True)\n", "model"),
])
def test_zeroing_helper_in_another_module_counts(tmp_path, helper, arg):
    root = _project(tmp_path, {"utils.py": helper, "train.py": TRAIN.format(name="clear", arg=arg)})
    path = root / "train.py"
    assert_clean(path.read_text(), str(path))


def test_helper_in_another_module_that_does_not_zero(tmp_path):
    root = _project(tmp_path, {
        "utils.py": "def log_lr(opt):\n    print(opt.param_groups[0]['lr'])\n",
        "train.py": TRAIN.format(name="log_lr", arg="optimizer"),
    })
    path = root / "train.py"
    text = path.read_text()
    assert rows(text, str(path)) == {6}
    fixed = assert_fix(text, ["optimizer.zero_grad()"], str(path))
    assert "    optimizer.step()\n    optimizer.zero_grad()\n    log_lr(optimizer)\n" in fixed


def test_step_in_a_helper_of_another_module(tmp_path):
    root = _project(tmp_path, {
        "steps.py": """
            def train_step(model, opt, batch):
                model(batch).mean().backward()
                opt.step()
        """,
        "train.py": """
            from steps import train_step

            for batch in loader:
                train_step(model, optimizer, batch)
        """,
    })
    path = root / "train.py"
    findings = found(path.read_text(), str(path))
    assert [(f.location.row, f.fix) for f in findings] == [(4, None)]
    assert "`train_step()`" in findings[0].message


def test_step_in_a_helper_of_another_module_that_zeroes(tmp_path):
    root = _project(tmp_path, {
        "steps.py": """
            def train_step(model, opt, batch):
                opt.zero_grad()
                model(batch).mean().backward()
                opt.step()
        """,
        "train.py": """
            from steps import train_step

            for batch in loader:
                train_step(model, optimizer, batch)
        """,
    })
    path = root / "train.py"
    assert_clean(path.read_text(), str(path))


def test_trainer_method_zeroing_in_a_base_class_of_another_module(tmp_path):
    root = _project(tmp_path, {
        "base.py": """
            class BaseTrainer:
                def clear(self):
                    for group in self.optimizer.param_groups:
                        for p in group["params"]:
                            p.grad = None
        """,
        "trainer.py": """
            from base import BaseTrainer

            class Trainer(BaseTrainer):
                def fit(self):
                    for batch in self.loader:
                        self.model(batch).mean().backward()
                        self.optimizer.step()
                        self.clear()
        """,
    })
    path = root / "trainer.py"
    assert_clean(path.read_text(), str(path))


def test_project_call_that_cannot_be_followed_is_unknown(tmp_path):
    root = _project(tmp_path, {
        "utils.py": "from elsewhere import hook as after_step\n",
        "train.py": TRAIN.format(name="after_step", arg="optimizer"),
    })
    path = root / "train.py"
    assert_clean(path.read_text(), str(path))
