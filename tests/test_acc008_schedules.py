"""ACC008 by DESIGN.md: a schedule stepped every micro-step is the bug only when its length counts
optimizer updates; the fix moves the call with the `if` that guards it, and never into only one of
two step blocks."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint.engine import check_source, fix_source
from tests.snippets import findings_of


def codes(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, "ACC008", path="case.py", dedent=True)}


def finding(source: str):
    found = findings_of(source, "ACC008", path="case.py", dedent=True)
    assert len(found) == 1, found
    return found[0]


def fixed(source: str) -> str:
    """Apply the unsafe fix and check it: compiles, ACC008 gone, a second run changes nothing."""
    source = textwrap.dedent(source)
    once = fix_source(source, "case.py", unsafe_fixes=True)
    assert once.error is None, once.error
    assert once.fixed_source is not None, "no fix applied"
    compile(once.fixed_source, "fixed.py", "exec")
    assert not any(f.code == "ACC008" for f in check_source(once.fixed_source, "case.py").findings)
    twice = fix_source(once.fixed_source, "case.py", unsafe_fixes=True)
    assert twice.fixed_source in (None, once.fixed_source)
    return once.fixed_source


UPDATES_GUARDED = """
    import math
    from transformers import get_linear_schedule_with_warmup

    def train(model, optimizer, loader, args):
        k = args.gradient_accumulation_steps
        updates_per_epoch = math.ceil(len(loader) / k)
        scheduler = None
        if args.schedule:
            scheduler = get_linear_schedule_with_warmup(optimizer, 100, updates_per_epoch * args.epochs)
        for epoch in range(args.epochs):
            for i, batch in enumerate(loader):
                loss = model(**batch).loss / k
                loss.backward()
                if (i + 1) % k == 0 or i + 1 == len(loader):
                    optimizer.step()
                    optimizer.zero_grad()
                # advance the warm-up
                if scheduler is not None:
                    scheduler.step()
"""


UPDATES = UPDATES_GUARDED.replace(
    "        scheduler = None\n        if args.schedule:\n            scheduler =", "        scheduler ="
)


def test_schedule_sized_in_updates_is_reported_with_its_length():
    assert UPDATES != UPDATES_GUARDED
    f = finding(UPDATES)
    assert "counts optimizer updates" in f.message and "updates_per_epoch * args.epochs" in f.message
    assert "`k` times too fast" in f.message


def test_fix_moves_the_guarding_if_with_its_comment():
    out = fixed(UPDATES)
    assert (
        "                optimizer.step()\n"
        "                # advance the warm-up\n"
        "                if scheduler is not None:\n"
        "                    scheduler.step()\n"
        "                optimizer.zero_grad()\n"
    ) in out
    assert out.count("scheduler.step()") == 1


def test_two_definitions_of_the_scheduler_are_not_in_sight():
    # `scheduler = None` then a conditional construction: which one reaches the loop is unknown.
    assert codes(UPDATES_GUARDED) == set()


def test_ceil_division_by_k_in_the_total():
    assert codes("""
        num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
        max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
        lr_scheduler = get_scheduler("linear", optimizer, num_warmup_steps=0, num_training_steps=max_train_steps)
        for epoch in range(args.num_train_epochs):
            for step, batch in enumerate(train_dataloader):
                loss = model(**batch).loss / args.gradient_accumulation_steps
                loss.backward()
                if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(train_dataloader):
                    optimizer.step()
                    optimizer.zero_grad()
                lr_scheduler.step()
    """) == {("ACC008", 12)}


def test_max_steps_bounding_an_update_counter_counts_updates():
    assert codes("""
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max_steps)
        global_step = 0
        for i, (x, y) in enumerate(loader):
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
                global_step += 1
            scheduler.step()
            if global_step >= max_steps:
                break
    """) == {("ACC008", 10)}


# --- sized in micro-steps: stepped at the rate it was built for ---------------------------------------

MICRO = """
    scheduler = {build}
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
            scheduler.step()
"""


def test_epochs_times_len_loader_is_micro_steps():
    assert codes(MICRO.format(build="get_linear_schedule_with_warmup(optimizer, 100, len(loader) * epochs)")) == set()
    assert codes(MICRO.format(build="LinearLR(optimizer, total_iters=epochs * len(loader))")) == set()


def test_max_steps_times_k_is_micro_steps():
    assert codes(MICRO.format(build="get_scheduler('cosine', optimizer, 0, max_steps * accum)")) == set()


def test_realfill_updates_times_k_is_micro_steps():
    # diffusers realfill: the update count, multiplied back by k, under accelerator.accumulate.
    assert codes("""
        accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
        num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
        args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
        lr_scheduler = get_scheduler(
            args.lr_scheduler, optimizer=optimizer,
            num_warmup_steps=args.lr_warmup_steps * args.gradient_accumulation_steps,
            num_training_steps=args.max_train_steps * args.gradient_accumulation_steps,
        )
        unet, optimizer, train_dataloader = accelerator.prepare(unet, optimizer, train_dataloader)
        for epoch in range(args.num_train_epochs):
            for step, batch in enumerate(train_dataloader):
                with accelerator.accumulate(unet):
                    loss = unet(batch).loss
                    accelerator.backward(loss)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
    """) == set()


def test_unprepared_scheduler_sized_in_updates_under_accumulate_is_reported():
    assert codes("""
        accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
        num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
        lr_scheduler = get_scheduler("linear", optimizer, 0, args.num_train_epochs * num_update_steps_per_epoch)
        unet, optimizer, train_dataloader = accelerator.prepare(unet, optimizer, train_dataloader)
        for epoch in range(args.num_train_epochs):
            for step, batch in enumerate(train_dataloader):
                with accelerator.accumulate(unet):
                    accelerator.backward(unet(batch).loss)
                    optimizer.step()
                    lr_scheduler.step()
                    optimizer.zero_grad()
    """) == {("ACC008", 11)}


def test_schedule_not_in_sight_stays_silent():
    # h2o-llmstudio: the scheduler arrives as a parameter (built elsewhere from epochs * len(loader)).
    assert codes("""
        def run_train(cfg, model, optimizer, scheduler, train_dataloader):
            for itr, data in enumerate(train_dataloader):
                loss = model(data)["loss"] / cfg.training.grad_accumulation
                loss.backward()
                if (itr + 1) % cfg.training.grad_accumulation == 0:
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                if scheduler is not None:
                    scheduler.step()
    """) == set()
    assert codes(MICRO.format(build="LinearLR(optimizer, start_factor=0.1, total_iters=500)")) == set()


# --- fixes that must not break code --------------------------------------------------------------------

TWO_BLOCKS = """
    import math
    scheduler = get_linear_schedule_with_warmup(optimizer, 0, math.ceil(len(loader) / accum) * epochs)
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum
        if use_amp:
            scaler.scale(loss).backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        else:
            loss.backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
        scheduler.step()
"""


def test_two_step_blocks_get_no_fix():
    assert codes(TWO_BLOCKS) == {("ACC008", 17)}
    result = fix_source(textwrap.dedent(TWO_BLOCKS), "case.py", unsafe_fixes=True)
    assert result.fixed_source is None
    assert any(f.code == "ACC008" for f in result.findings)


def test_guard_with_other_statements_or_an_else_gets_no_fix():
    base = """
        scheduler = LinearLR(optimizer, total_iters=len(loader) // accum)
        for i, (x, y) in enumerate(loader):
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
            {tail}
    """
    with_more = base.replace("{tail}", "if scheduler is not None:\n                scheduler.step()\n                lr = scheduler.get_last_lr()")
    with_else = base.replace("{tail}", "if warm:\n                scheduler.step()\n            else:\n                cooldown.step()")
    for source in (with_more, with_else):
        assert ("ACC008", 9) in codes(source), source
        result = fix_source(textwrap.dedent(source), "case.py", unsafe_fixes=True)
        assert result.fixed_source is None, result.fixed_source


def test_trainer_class_with_scheduler_built_in_init():
    source = """
        class Trainer:
            def __init__(self, model, loader, cfg):
                self.model = model
                self.loader = loader
                self.accum = cfg.accum
                self.opt = torch.optim.AdamW(model.parameters())
                self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, 1e-3, total_steps=len(loader) // self.accum)

            def train_epoch(self):
                for i, batch in enumerate(self.loader):
                    (self.model(batch) / self.accum).backward()
                    if (i + 1) % self.accum == 0 or i + 1 == len(self.loader):
                        self.opt.step()
                        self.opt.zero_grad()
                    self.sched.step()
    """
    assert codes(source) == {("ACC008", 16)}
    out = fixed(source)
    assert "                self.opt.step()\n                self.sched.step()\n                self.opt.zero_grad()\n" in out
    micro = source.replace("len(loader) // self.accum", "len(loader) * cfg.epochs")
    assert codes(micro) == set()


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


def _found(path: Path) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(path.read_bytes(), "ACC008", path=str(path))}


def test_multi_module_k_imported_from_config(tmp_path):
    _write(tmp_path, {
        "config.py": "ACCUM = 8\nEPOCHS = 3\n",
        "train.py": """
            import math
            from config import ACCUM, EPOCHS

            def train(model, optimizer, loader):
                scheduler = get_cosine_schedule_with_warmup(optimizer, 10, EPOCHS * math.ceil(len(loader) / ACCUM))
                for i, batch in enumerate(loader):
                    (model(batch) / ACCUM).backward()
                    if (i + 1) % ACCUM == 0 or i + 1 == len(loader):
                        optimizer.step()
                        optimizer.zero_grad()
                    scheduler.step()
        """,
    })
    assert _found(tmp_path / "train.py") == {("ACC008", 11)}


def test_multi_module_scheduler_built_in_another_module_is_not_in_sight(tmp_path):
    _write(tmp_path, {
        "sched.py": """
            def build(optimizer, loader, epochs, accum):
                return get_linear_schedule_with_warmup(optimizer, 0, len(loader) // accum * epochs)
        """,
        "train.py": """
            from sched import build

            def train(model, optimizer, loader, accum):
                scheduler = build(optimizer, loader, 3, accum)
                for i, batch in enumerate(loader):
                    (model(batch) / accum).backward()
                    if (i + 1) % accum == 0 or i + 1 == len(loader):
                        optimizer.step()
                        optimizer.zero_grad()
                    scheduler.step()
        """,
    })
    assert _found(tmp_path / "train.py") == set()


def test_scaler_update_every_micro_step_names_the_crash():
    f = finding("""
        scaler = torch.amp.GradScaler("cuda")
        for i, (x, y) in enumerate(loader):
            scaler.scale(criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                scaler.step(optimizer)
                optimizer.zero_grad()
            scaler.update()
    """)
    assert "No inf checks were recorded" in f.message
