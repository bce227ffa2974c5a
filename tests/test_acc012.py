"""ACC012 accumulation-not-applied: accumulation is set up for k > 1 (the loss divided by the
accumulation steps, an Accelerate loop that reads them) but the optimizer step is not held for k
micro-steps: it runs on every micro-step, or under a logging / progress-bar gate.

Positive and negative cases in script, trainer-class and multi-module shapes. Lines that must be
reported carry `# <ACC012`; every other line must stay clean. The rule is report only."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from accumlint.analysis.windows import reporting_frequency
from accumlint.engine import fix_source
from tests.snippets import findings_of

SELECT = {"ACC012"}


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def found(source: str, select=SELECT) -> list:
    return findings_of(source, path="case.py", select=select)


def marked(source: str) -> set[int]:
    return {row for row, line in enumerate(source.splitlines(), 1) if "# <ACC012" in line}


def assert_marked(source: str) -> list:
    findings = found(source)
    assert {f.location.row for f in findings} == marked(source), [(f.location.row, f.message) for f in findings]
    assert marked(source), "a positive case must mark the line it expects"
    assert all(f.fix is None for f in findings)
    assert fix_source(source, "case.py", select=SELECT, unsafe_fixes=True).fixed_source is None
    return findings


def assert_clean(source: str) -> None:
    got = [(f.location.row, f.message) for f in found(source)]
    assert got == [], f"{got}\n{source}"


HEAD = """
import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
parser.add_argument("--logging_steps", type=int, default=50)
args = parser.parse_args()
model = nn.Linear(16, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(torch.randn(64, 16), batch_size=8)
"""


def script(body: str) -> str:
    return _src(HEAD) + _src(body)


# --- (a) the loss is divided by k, the step runs every micro-step ------------------------------------

SCRIPT_POSITIVES = {
    "args_attribute": """
        for step, x in enumerate(loader):
            loss = model(x).pow(2).mean()
            loss = loss / args.gradient_accumulation_steps
            loss.backward()
            optimizer.step()  # <ACC012
            optimizer.zero_grad()
    """,
    "alias_and_scheduler": """
        k = args.gradient_accumulation_steps
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, total_iters=len(loader) // k)
        for x in loader:
            (model(x).mean() / k).backward()
            optimizer.step()  # <ACC012
            scheduler.step()
            optimizer.zero_grad()
    """,
    "in_place_division_module_constant": """
        ACCUM_STEPS = 8
        for i, x in enumerate(loader):
            loss = model(x).mean()
            loss /= ACCUM_STEPS
            loss.backward()
            optimizer.step()  # <ACC012
            optimizer.zero_grad()
    """,
    "divided_only_when_k_above_one": """
        for step, x in enumerate(loader):
            loss = model(x).mean()
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            loss.backward()
            optimizer.step()  # <ACC012
            optimizer.zero_grad()
    """,
    "setting_branches_still_every_micro_step": """
        scaler = torch.cuda.amp.GradScaler()
        for step, x in enumerate(loader):
            loss = model(x).mean() / args.gradient_accumulation_steps
            if args.fp16:
                scaler.scale(loss).backward()
                scaler.step(optimizer)  # <ACC012
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
            optimizer.zero_grad()
    """,
    "step_inside_the_micro_step_loop": """
        accum_steps = 4
        for batch in loader:
            for chunk in batch.chunk(accum_steps):
                loss = model(chunk).mean() / accum_steps
                loss.backward()
                optimizer.step()  # <ACC012
                optimizer.zero_grad()
    """,
    "grad_accum_in_config_dict": """
        config = {"grad_accum": 4}
        gas = config["grad_accum"]
        step = 0
        while step < 100:
            for x in loader:
                loss = model(x).mean().div(gas)
                loss.backward()
                optimizer.step()  # <ACC012
                optimizer.zero_grad()
                step += 1
    """,
}


@pytest.mark.parametrize("name", sorted(SCRIPT_POSITIVES))
def test_script_positive(name):
    assert_marked(script(SCRIPT_POSITIVES[name]))


def test_message_names_the_gate_and_the_consequence():
    (finding,) = assert_marked(script(SCRIPT_POSITIVES["args_attribute"]))
    assert "`optimizer.step()` runs on every micro-step" in finding.message
    assert "`args.gradient_accumulation_steps` times too small" in finding.message
    assert "`if (step + 1) % args.gradient_accumulation_steps == 0:`" in finding.message
    assert "schedule" not in finding.message  # no scheduler in that loop: no claim about one


def test_message_mentions_the_schedule_only_when_the_loop_steps_one():
    (finding,) = assert_marked(script(SCRIPT_POSITIVES["alias_and_scheduler"]))
    assert "schedule sized in optimizer updates ends early" in finding.message
    assert "`if (step + 1) % k == 0:`" in finding.message or "% k == 0:`" in finding.message


SCRIPT_NEGATIVES = {
    "k_is_a_literal_one": """
        accum_steps = 1
        for x in loader:
            loss = model(x).mean() / accum_steps
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "divided_by_a_token_count": """
        for x in loader:
            num_tokens = x.numel()
            loss = model(x).sum() / num_tokens
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "divided_by_the_batch_size": """
        for x in loader:
            loss = model(x).sum() / x.size(0)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "accumulation_read_but_loss_not_divided": """
        print(args.gradient_accumulation_steps)
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "correctly_gated_on_k": """
        for step, x in enumerate(loader):
            loss = model(x).mean() / args.gradient_accumulation_steps
            loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
                if step % args.logging_steps == 0:
                    print(loss.item())
    """,
    "gated_by_a_counter_reset_at_the_step": """
        micro = 0
        for x in loader:
            loss = model(x).mean() / args.gradient_accumulation_steps
            loss.backward()
            micro += 1
            if micro == args.gradient_accumulation_steps:
                optimizer.step()
                optimizer.zero_grad()
                micro = 0
    """,
    "gated_by_a_flag_from_a_helper": """
        def boundary(i):
            return (i + 1) % args.gradient_accumulation_steps == 0

        for i, x in enumerate(loader):
            loss = model(x).mean() / args.gradient_accumulation_steps
            loss.backward()
            if boundary(i):
                optimizer.step()
                optimizer.zero_grad()
    """,
    "early_continue_on_an_unread_test": """
        for i, x in enumerate(loader):
            loss = model(x).mean() / args.gradient_accumulation_steps
            loss.backward()
            sync_now = i % args.gradient_accumulation_steps == args.gradient_accumulation_steps - 1
            if not sync_now:
                continue
            optimizer.step()
            optimizer.zero_grad()
    """,
    "nanogpt_inner_micro_step_loop": """
        grad_accum = 4
        it = iter(loader)
        for it_num in range(100):
            for micro_step in range(grad_accum):
                loss = model(next(it)).mean() / grad_accum
                loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "step_every_micro_step_with_no_division": """
        for x in loader:
            model(x).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "window_summed_in_an_inner_loop_then_one_backward": """
        accum_steps = 4
        for batch in loader:
            optimizer.zero_grad()
            loss = 0
            for chunk in batch.chunk(accum_steps):
                loss += model(chunk).mean() / accum_steps
            loss.backward()
            optimizer.step()
    """,
    "window_summed_with_sum_then_one_backward": """
        accum_steps = 4
        for batch in loader:
            losses = [model(chunk).mean() for chunk in batch.chunk(accum_steps)]
            loss = sum(losses) / accum_steps
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "inner_chunks_without_division": """
        accum_steps = 4
        for batch in loader:
            for chunk in batch.chunk(accum_steps):
                loss = model(chunk).mean()
                loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "an_accumulation_plugin_is_no_k": """
        gradient_accumulation_plugin = make_plugin(num_steps=2)
        for x in loader:
            loss = model(x).mean() / gradient_accumulation_plugin
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "an_accumulated_loss_is_no_k": """
        accum_loss = 0.0
        for x in loader:
            loss = model(x).mean()
            accum_loss += loss.item()
            (loss / (accum_loss + 1)).backward()
            optimizer.step()
            optimizer.zero_grad()
    """,
    "gate_named_update_every_relation_unknown": """
        update_every = 4
        for i, x in enumerate(loader):
            loss = model(x).mean() / args.gradient_accumulation_steps
            loss.backward()
            if (i + 1) % update_every == 0:
                optimizer.step()
                optimizer.zero_grad()
    """,
    "literal_gate_equal_to_k": """
        ACCUM = 8
        for i, x in enumerate(loader):
            loss = model(x).mean() / ACCUM
            loss.backward()
            if (i + 1) % 8 == 0:
                print("step", i)
                optimizer.step()
                optimizer.zero_grad()
    """,
}


@pytest.mark.parametrize("name", sorted(SCRIPT_NEGATIVES))
def test_script_negative(name):
    assert_clean(script(SCRIPT_NEGATIVES[name]))


# --- frameworks ------------------------------------------------------------------------------------

ACCELERATE_NOT_RECEIVED = _src("""
    import argparse
    import torch
    from accelerate import Accelerator

    parser = argparse.ArgumentParser()
    parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
    args = parser.parse_args()
    accelerator = Accelerator(mixed_precision="fp16")
    model = torch.nn.Linear(16, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    loader = torch.utils.data.DataLoader(torch.randn(64, 16), batch_size=8)
    max_train_steps = len(loader) // args.gradient_accumulation_steps
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, total_iters=max_train_steps)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(batch).mean()
            accelerator.backward(loss)
            optimizer.step()  # <ACC012
            scheduler.step()
            optimizer.zero_grad()
""")


def test_accelerator_that_never_received_the_steps():
    (finding,) = assert_marked(ACCELERATE_NOT_RECEIVED)
    assert "`accelerator` (line 8) never received the accumulation steps" in finding.message
    assert "gradient_accumulation_steps=args.gradient_accumulation_steps" in finding.message


@pytest.mark.parametrize("change", [
    ('Accelerator(mixed_precision="fp16")',
     'Accelerator(mixed_precision="fp16", gradient_accumulation_steps=args.gradient_accumulation_steps)'),
    ('Accelerator(mixed_precision="fp16")', 'Accelerator(**accelerator_kwargs)'),
    ('model = torch.nn.Linear(16, 1)',
     'model = torch.nn.Linear(16, 1)\naccelerator.gradient_accumulation_steps = args.gradient_accumulation_steps'),
    # Nothing in the file reads the accumulation steps: accumulate() with one step is harmless.
    ('max_train_steps = len(loader) // args.gradient_accumulation_steps', 'max_train_steps = len(loader)'),
])
def test_accelerator_negatives(change):
    old, new = change
    source = ACCELERATE_NOT_RECEIVED.replace(old, new).replace("  # <ACC012", "")
    assert source != ACCELERATE_NOT_RECEIVED
    assert_clean(source)


def test_accelerate_hand_gate_with_a_default_accelerator_is_the_old_style_and_fine():
    assert_clean(_src("""
        import torch
        from accelerate import Accelerator

        accelerator = Accelerator()
        model = torch.nn.Linear(16, 1)
        optimizer = torch.optim.AdamW(model.parameters())
        loader = torch.utils.data.DataLoader(torch.randn(64, 16), batch_size=8)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        gradient_accumulation_steps = 4
        for step, batch in enumerate(loader):
            loss = model(batch).mean() / gradient_accumulation_steps
            accelerator.backward(loss)
            if step % gradient_accumulation_steps == 0 or step == len(loader) - 1:
                optimizer.step()
                optimizer.zero_grad()
    """))


def test_accelerate_default_accelerator_divided_loss_and_every_micro_step():
    assert_marked(_src("""
        import torch
        from accelerate import Accelerator

        accelerator = Accelerator()
        model = torch.nn.Linear(16, 1)
        optimizer = torch.optim.AdamW(model.parameters())
        loader = torch.utils.data.DataLoader(torch.randn(64, 16), batch_size=8)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        gradient_accumulation_steps = 4
        for step, batch in enumerate(loader):
            loss = model(batch).mean() / gradient_accumulation_steps
            accelerator.backward(loss)
            optimizer.step()  # <ACC012
            optimizer.zero_grad()
    """))


def test_deepspeed_engine_steps_every_micro_step_by_design():
    assert_clean(_src("""
        import deepspeed
        import torch

        def train(args, model, loader):
            engine, optimizer, _, _ = deepspeed.initialize(model=model, config=args.ds_config)
            for batch in loader:
                loss = engine(batch).mean() / args.gradient_accumulation_steps
                engine.backward(loss)
                engine.step()
    """))


def test_lightning_automatic_optimisation_steps_for_you():
    assert_clean(_src("""
        import lightning as L
        from torch import nn

        class Module(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return self.model(batch).mean() / self.hparams.accumulate_grad_batches
    """))


def test_lightning_manual_optimisation_dividing_and_stepping_every_batch():
    assert_marked(_src("""
        import lightning as L
        from torch import nn

        class Module(L.LightningModule):
            def __init__(self, accum_steps):
                super().__init__()
                self.automatic_optimization = False
                self.accum_steps = accum_steps
                self.model = nn.Linear(16, 1)

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                loss = self.model(batch).mean() / self.accum_steps
                self.manual_backward(loss)
                opt.step()  # <ACC012
                opt.zero_grad()
    """))


def test_lightning_manual_optimisation_gated_on_the_batch_index():
    assert_clean(_src("""
        import lightning as L
        from torch import nn

        class Module(L.LightningModule):
            def __init__(self, accum_steps):
                super().__init__()
                self.automatic_optimization = False
                self.accum_steps = accum_steps
                self.model = nn.Linear(16, 1)

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                loss = self.model(batch).mean() / self.accum_steps
                self.manual_backward(loss)
                if (batch_idx + 1) % self.accum_steps == 0 or self.trainer.is_last_batch:
                    opt.step()
                    opt.zero_grad()
    """))


# --- (c) the step sits under a logging / progress-bar gate -------------------------------------------

GATE_POSITIVES = {
    "logging_steps": """
        global_step = 0
        for step, x in enumerate(loader):
            loss = model(x).mean() / args.gradient_accumulation_steps
            loss.backward()
            global_step += 1
            if global_step % args.logging_steps == 0:
                print(loss.item())
                optimizer.step()  # <ACC012
                optimizer.zero_grad()
    """,
    "log_interval_name": """
        log_interval = 10
        accum_steps = 4
        for i, x in enumerate(loader):
            loss = model(x).mean() / accum_steps
            loss.backward()
            if i % log_interval == 0:
                optimizer.step()  # <ACC012
                optimizer.zero_grad()
    """,
    "progress_bar_block_with_a_literal_modulus": """
        from tqdm import tqdm
        gradient_accumulation_steps = 4
        progress_bar = tqdm(range(len(loader)))
        for step, x in enumerate(loader):
            loss = model(x).mean() / gradient_accumulation_steps
            loss.backward()
            if step % 100 == 0:
                progress_bar.update(100)
                progress_bar.set_postfix(loss=loss.item())
                optimizer.step()  # <ACC012
                optimizer.zero_grad()
    """,
}


@pytest.mark.parametrize("name", sorted(GATE_POSITIVES))
def test_step_under_a_reporting_gate(name):
    (finding,) = assert_marked(script(GATE_POSITIVES[name]))
    assert "the step block is misplaced" in finding.message
    assert "% " in finding.message and "== 0:`" in finding.message


def test_reporting_gate_message_names_the_gate_that_should_hold_the_step():
    (finding,) = assert_marked(script(GATE_POSITIVES["logging_steps"]))
    assert "`if global_step % args.logging_steps == 0:`, a logging frequency" in finding.message
    assert "`if (global_step + 1) % args.gradient_accumulation_steps == 0:`" in finding.message


def test_reporting_gate_without_division_is_acc001_report_only():
    source = script("""
        for step, x in enumerate(loader):
            loss = model(x).mean()
            loss.backward()
            if step % args.logging_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """)
    assert found(source) == []
    (acc001,) = found(source, {"ACC001"})
    assert acc001.fix is None
    assert "reads as a logging frequency" in acc001.message
    assert fix_source(source, "case.py", select={"ACC001"}, unsafe_fixes=True).fixed_source is None


def test_accumulation_gate_without_division_keeps_acc001_safe_fix():
    source = script("""
        for step, x in enumerate(loader):
            loss = model(x).mean()
            loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """)
    (acc001,) = found(source, {"ACC001"})
    assert acc001.fix is not None and acc001.fix.applicability == "safe"
    fixed = fix_source(source, "case.py", select={"ACC001"}).fixed_source
    assert fixed is not None and "loss / args.gradient_accumulation_steps" in fixed


@pytest.mark.parametrize("text, expected", [
    ("args.logging_steps", True), ("log_interval", True), ("print_every", True), ("cfg['printEvery']", True),
    ("self.cfg.eval_interval", True), ("opt.print_freq", True), ("args.save_steps", True),
    ("args.gradient_accumulation_steps", False), ("update_every", False), ("accum_iter", False), ("k", False),
    ("interval", False), ("n_critic", False), ("accum_log_steps", False), ("8", False),
])
def test_reporting_frequency_fact(text, expected):
    assert reporting_frequency(ast.parse(text, mode="eval").body) is expected


# --- trainer classes -------------------------------------------------------------------------------

TRAINER = _src("""
    import torch


    class Trainer:
        def __init__(self, model, cfg):
            self.model = model
            self.cfg = cfg
            self.grad_accum = cfg.grad_accum
            self.optimizer = torch.optim.AdamW(model.parameters())

        def _optimizer_step(self):
            self.optimizer.step()
            self.optimizer.zero_grad()

        def _backward(self, batch):
            loss = self.model(batch).mean() / self.grad_accum
            loss.backward()
            return loss

        def train_epoch(self, loader):
            for i, batch in enumerate(loader):
                self._backward(batch)
                self._optimizer_step()  # <ACC012
""")


def test_trainer_class_step_and_backward_in_methods():
    (finding,) = assert_marked(TRAINER)
    assert "`self._optimizer_step()` runs on every micro-step" in finding.message


def test_trainer_class_gated_inside_the_step_method():
    source = TRAINER.replace(
        "    def _optimizer_step(self):\n        self.optimizer.step()",
        "    def _optimizer_step(self, i):\n        if (i + 1) % self.grad_accum == 0:\n            self.optimizer.step()",
    ).replace("self._optimizer_step()  # <ACC012", "self._optimizer_step(i)")
    assert "if (i + 1) % self.grad_accum" in source
    assert_clean(source)


def test_trainer_class_gated_in_the_loop():
    source = TRAINER.replace(
        "            self._optimizer_step()  # <ACC012",
        "            if (i + 1) % self.grad_accum == 0:\n                self._optimizer_step()",
    )
    assert "if (i + 1) % self.grad_accum" in source
    assert_clean(source)


def test_trainer_class_dividing_by_a_token_count():
    source = TRAINER.replace("self.model(batch).mean() / self.grad_accum", "self.model(batch).sum() / batch.numel()")
    assert_clean(source.replace("  # <ACC012", ""))


def test_trainer_class_step_under_the_logging_gate():
    assert_marked(_src("""
        import torch


        class Trainer:
            def __init__(self, model, cfg):
                self.model = model
                self.cfg = cfg
                self.optimizer = torch.optim.AdamW(model.parameters())

            def train_epoch(self, loader):
                for i, batch in enumerate(loader):
                    loss = self.model(batch).mean() / self.cfg.gradient_accumulation_steps
                    loss.backward()
                    if (i + 1) % self.cfg.log_every == 0:
                        print(i, loss.item())
                        self.optimizer.step()  # <ACC012
                        self.optimizer.zero_grad()
    """))


# --- several modules -------------------------------------------------------------------------------

def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_src(text))
    return tmp_path


def _found_in(path: Path) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in findings_of(path.read_bytes(), path=str(path), select=SELECT)]


TRAIN = """
    import torch
    from {module} import {helper}


    def train(model, loader, args):
        optimizer = torch.optim.AdamW(model.parameters())
        for step, batch in enumerate(loader):
            loss = {helper}(model, batch, args.accum_steps)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
"""


def test_loss_divided_in_a_helper_of_another_module(tmp_path):
    root = _project(tmp_path, {
        "losses.py": """
            def compute_loss(model, batch, accum_steps):
                return model(batch).mean() / accum_steps
        """,
        "train.py": TRAIN.format(module="losses", helper="compute_loss"),
    })
    assert _found_in(root / "train.py") == [("ACC012", 10)]


def test_loss_divided_by_tokens_in_a_helper_of_another_module(tmp_path):
    root = _project(tmp_path, {
        "losses.py": """
            def compute_loss(model, batch, accum_steps):
                return model(batch).sum() / batch.numel()
        """,
        "train.py": TRAIN.format(module="losses", helper="compute_loss"),
    })
    assert _found_in(root / "train.py") == []


STEP_TRAIN = """
    import torch
    from optim_utils import apply_update


    def train(model, loader, optimizer, args):
        for step, batch in enumerate(loader):
            loss = model(batch).mean() / args.gradient_accumulation_steps
            loss.backward()
            apply_update(optimizer, step, args)
"""


def test_step_in_a_helper_of_another_module_every_micro_step(tmp_path):
    root = _project(tmp_path, {
        "optim_utils.py": """
            def apply_update(optimizer, step, args):
                optimizer.step()
                optimizer.zero_grad()
        """,
        "train.py": STEP_TRAIN,
    })
    assert _found_in(root / "train.py") == [("ACC012", 9)]


def test_step_in_a_helper_of_another_module_that_gates_it(tmp_path):
    root = _project(tmp_path, {
        "optim_utils.py": """
            def apply_update(optimizer, step, args):
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        "train.py": STEP_TRAIN,
    })
    assert _found_in(root / "train.py") == []


# --- the updates counted in windows, the step every micro-step, the loss not divided -------------

SIZED = _src("""
    import math
    import torch
    from accelerate import Accelerator

    def train(args, model, loader):
        accelerator = Accelerator()
        optimizer = torch.optim.AdamW(model.parameters())
        num_update_steps_per_epoch = math.ceil(len(loader) / args.gradient_accumulation_steps)
        max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
        scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, total_iters=max_train_steps)
        model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
        for epoch in range(args.num_train_epochs):
            for step, batch in enumerate(loader):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()  # <ACC012
                scheduler.step()
                optimizer.zero_grad()
""")


def test_updates_counted_in_windows_but_the_step_runs_every_micro_step():
    (finding,) = assert_marked(SIZED)
    assert "counts optimizer updates in windows of `args.gradient_accumulation_steps` (line 8)" in finding.message
    assert "schedule sized in optimizer updates ends early" in finding.message


def test_counted_in_windows_with_the_step_gated_is_not_this_rule():
    source = SIZED.replace(
        "            optimizer.step()  # <ACC012\n            scheduler.step()\n            optimizer.zero_grad()",
        "            if (step + 1) % args.gradient_accumulation_steps == 0:\n"
        "                optimizer.step()\n                scheduler.step()\n                optimizer.zero_grad()",
    )
    assert "if (step + 1)" in source
    assert_clean(source)


def test_a_loop_chosen_by_the_accumulation_steps_is_a_mode_switch():
    assert_clean(_src("""
        import math
        import torch

        def train(args, model, loader, optimizer):
            updates = math.ceil(len(loader) / args.gradient_accumulation_steps)
            if args.gradient_accumulation_steps == 1:
                for batch in loader:
                    model(batch).mean().backward()
                    optimizer.step()
                    optimizer.zero_grad()
            else:
                for i, batch in enumerate(loader):
                    (model(batch).mean() / args.gradient_accumulation_steps).backward()
                    if (i + 1) % args.gradient_accumulation_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()
    """))


def test_logging_gate_in_a_script_that_reads_the_accumulation_steps_undivided():
    source = script("""
        print(args.gradient_accumulation_steps)
        for step, x in enumerate(loader):
            loss = model(x).mean()
            loss.backward()
            if step % args.logging_steps == 0:
                optimizer.step()  # <ACC012
                optimizer.zero_grad()
    """)
    (finding,) = assert_marked(source)
    assert "the code reads the accumulation steps `args.gradient_accumulation_steps`" in finding.message
    (acc001,) = found(source, {"ACC001"})
    assert acc001.fix is None


INNER_WINDOW_LOOP = _src("""
    for i in range(num_batches):
        for _ in range(ACCUM):
            loss = model(next(loader))
            (loss / ACCUM).backward()
            opt.step()  # <ACC012
            opt.zero_grad()
""")


def test_step_inside_a_loop_over_range_k_is_advised_after_that_loop():
    # The inner loop is the window itself: a `% k` gate on its throwaway counter is the wrong advice.
    (finding,) = assert_marked(INNER_WINDOW_LOOP)
    assert "move the step, then the zeroing, after the loop over `range(ACCUM)` (line 2)" in finding.message
    assert "% ACCUM" not in finding.message


def test_step_inside_a_loop_over_the_data_is_advised_a_gate():
    source = INNER_WINDOW_LOOP.replace("for _ in range(ACCUM):", "for _ in range(len(batches)):")
    (finding,) = assert_marked(source)
    assert "`if (_ + 1) % ACCUM == 0:`" in finding.message
