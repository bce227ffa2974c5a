"""ACC005 by DESIGN.md: the partial window at the end of a finite epoch; not an epoch defined by a
step count or an endless iterator; the safe end clause only over an iterable the code shows to be
sized and when nothing else is decided by the same test; the off-by-one `i % k == 0` gate named."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from accumlint.engine import check_source, fix_source
from tests.snippets import findings_of


def acc005(source: str):
    return findings_of(source, "ACC005", path="case.py", dedent=True)


def fixed(source: str) -> str:
    source = textwrap.dedent(source)
    once = fix_source(source, "case.py")
    assert once.error is None, once.error
    assert once.fixed_source is not None, "no fix applied"
    compile(once.fixed_source, "fixed.py", "exec")
    assert not any(f.code == "ACC005" for f in check_source(once.fixed_source, "case.py").findings)
    twice = fix_source(once.fixed_source, "case.py")
    assert twice.fixed_source in (None, once.fixed_source)
    return once.fixed_source


def reported_without_fix(source: str) -> None:
    assert len(acc005(source)) == 1
    result = fix_source(textwrap.dedent(source), "case.py", unsafe_fixes=True)
    assert result.error is None, result.error
    assert result.fixed_source is None, result.fixed_source


LOOP = """
    import torch
    {binding}
    for epoch in range(epochs):
        for i, (x, y) in enumerate({iterable}):
            loss = criterion(model(x), y) / accum
            loss.backward()
            if {gate}:
                optimizer.step()
                optimizer.zero_grad()
"""


def loop(iterable: str = "loader", gate: str = "(i + 1) % accum == 0",
         binding: str = "loader = torch.utils.data.DataLoader(dataset, batch_size=8)") -> str:
    return LOOP.format(iterable=iterable, gate=gate, binding=binding.replace("\n", "\n    "))


def test_missing_end_clause_over_a_dataloader_is_fixed():
    [f] = acc005(loop())
    assert "no end-of-data clause" in f.message and "len % accum" in f.message
    assert "if (i + 1) % accum == 0 or i + 1 == len(loader):" in fixed(loop())


def test_off_by_one_gate_is_named_and_fixed():
    source = loop(gate="i % accum == 0")
    [f] = acc005(source)
    assert "counted from 0" in f.message and "one-batch first window" in f.message
    assert "(len - 1) % accum" in f.message
    assert "if (i + 1) % accum == 0 or i + 1 == len(loader):" in fixed(source)


def test_start_1_with_plain_modulo_is_no_off_by_one():
    source = loop(iterable="loader, start=1", gate="i % accum == 0")
    [f] = acc005(source)
    assert "counted from 0" not in f.message
    assert "if i % accum == 0 or i == len(loader):" in fixed(source)


def test_tqdm_over_a_list_is_sized():
    source = loop(iterable="tqdm(batches)", binding="batches = list(zip(xs, ys))")
    assert "or i + 1 == len(batches):" in fixed(source)


def test_iterables_that_may_have_no_len_get_no_fix():
    reported_without_fix(loop(iterable="iter(loader)"))
    reported_without_fix(loop(iterable="stream", binding="stream = (b for b in source_batches)"))
    reported_without_fix(loop(binding="loader = torch.utils.data.DataLoader(StreamDataset(files))\n"
                                      "class StreamDataset(torch.utils.data.IterableDataset):\n    pass"))
    reported_without_fix(loop(binding="loader = make_loader(cfg)"))


def test_loader_parameter_gets_no_fix():
    reported_without_fix("""
        def train(model, optimizer, loader, accum):
            for i, (x, y) in enumerate(loader):
                (criterion(model(x), y) / accum).backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
    """)


def test_sync_gated_on_the_same_test_gets_no_fix():
    # h2o-llmstudio: gradient sync decided by the same (off-by-one) test.
    source = """
        train_dataloader = torch.utils.data.DataLoader(ds, batch_size=4)
        for itr, data in enumerate(train_dataloader):
            model.require_backward_grad_sync = itr % cfg.training.grad_accumulation == 0
            loss = model(data)["loss"] / cfg.training.grad_accumulation
            loss.backward()
            if itr % cfg.training.grad_accumulation == 0:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
    """
    reported_without_fix(source)
    [f] = acc005(source)
    assert "counted from 0" in f.message


def test_amp_and_plain_paths_both_fixed():
    source = """
        loader = torch.utils.data.DataLoader(ds, batch_size=4)
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / k
            if amp:
                scaler.scale(loss).backward()
                if (i + 1) % k == 0:
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad()
            else:
                loss.backward()
                if (i + 1) % k == 0:
                    optimizer.step()
                    optimizer.zero_grad()
    """
    assert len(acc005(source)) == 2
    assert fixed(source).count("if (i + 1) % k == 0 or i + 1 == len(loader):") == 2


# --- not the bug ----------------------------------------------------------------------------------------

def test_epoch_defined_by_a_step_count_is_clean():
    for source in (
        """
        it = iter(loader)
        for step in range(max_steps * accum):
            x, y = next(it)
            (criterion(model(x), y) / accum).backward()
            if (step + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
        """,
        """
        for i, (x, y) in enumerate(itertools.islice(loader, n_updates * accum)):
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
        """,
        """
        for i, (x, y) in zip(range(n_updates * accum), loader):
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
        """,
        """
        for i, (x, y) in enumerate(itertools.cycle(loader)):
            (criterion(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
            if i >= max_steps:
                break
        """,
    ):
        assert acc005(source) == [], source


def test_deepspeed_engine_step_is_left_to_the_engine():
    assert acc005("""
        model_engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)
        loader = torch.utils.data.DataLoader(dataset, batch_size=8)
        for i, batch in enumerate(loader):
            loss = model_engine(batch) / accum
            model_engine.backward(loss)
            if (i + 1) % accum == 0:
                model_engine.step()
    """) == []


def test_k_one_unless_deepspeed_owns_the_step_is_clean():
    # accelerate's test scripts: k comes from the DeepSpeed config, which then steps by itself.
    source = """
        def training_function(accelerator, model, optimizer, train_dataloader):
            if accelerator.state.deepspeed_plugin is not None:
                gradient_accumulation_steps = accelerator.state.deepspeed_plugin.deepspeed_config[
                    "gradient_accumulation_steps"
                ]
            else:
                gradient_accumulation_steps = 1
            for step, batch in enumerate(train_dataloader):
                loss = model(**batch).loss / gradient_accumulation_steps
                accelerator.backward(loss)
                if step % gradient_accumulation_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
    """
    assert acc005(source) == []
    # k from the batch size instead (accelerate's nlp_example): the off-by-one gate is real.
    assert len(acc005(source.replace("accelerator.state.deepspeed_plugin.deepspeed_config[", "cfg[", 1))) == 1


def test_k_bound_to_one_is_clean():
    assert acc005(loop(binding="loader = torch.utils.data.DataLoader(dataset)\naccum = 1")) == []


# --- trainer class and multi-module shapes ----------------------------------------------------------

TRAINER = """
    import torch

    class Trainer:
        def __init__(self, model, dataset, cfg):
            self.model = model
            self.cfg = cfg
            self.loader = {loader}

        def train_epoch(self, optimizer):
            for step, batch in enumerate(tqdm(self.loader)):
                loss = self.model(**batch).loss / self.cfg.accum
                loss.backward()
                if step % self.cfg.accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
"""


def test_trainer_class_loader_built_in_init_is_sized():
    source = TRAINER.format(loader="torch.utils.data.DataLoader(dataset, batch_size=8)")
    [f] = acc005(source)
    assert "counted from 0" in f.message
    assert "if (step + 1) % self.cfg.accum == 0 or step + 1 == len(self.loader):" in fixed(source)


def test_trainer_class_loader_from_unknown_call_gets_no_fix():
    reported_without_fix(TRAINER.format(loader="build_loader(dataset, cfg)"))


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


def test_multi_module_loader_returned_by_another_module(tmp_path):
    _write(tmp_path, {
        "data.py": """
            import torch

            def get_dataloaders(batch_size):
                return torch.utils.data.DataLoader(train_ds, batch_size=batch_size), None
        """,
        "train.py": """
            from data import get_dataloaders

            def training_function(model, optimizer, k):
                train_dataloader, eval_dataloader = get_dataloaders(16)
                for step, batch in enumerate(train_dataloader):
                    loss = model(**batch).loss / k
                    loss.backward()
                    if step % k == 0:
                        optimizer.step()
                        optimizer.zero_grad()
        """,
    })
    path = tmp_path / "train.py"
    result = engine.check_source(path.read_bytes(), str(path))
    found = [f for f in result.findings if f.code == "ACC005"]
    assert [(f.location.row, f.fix is None) for f in found] == [(8, True)]
    assert "counted from 0" in found[0].message


BAR_BOUND_TO_A_NAME = """
import torch
from tqdm import tqdm

def train(model, optimizer, train_dataloader, args):
    for epoch in range(args.epochs):
        bar = {bar}
        for step, batch in bar:
            loss = model(batch).mean() / args.gradient_accumulation_steps
            loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def test_a_progress_bar_of_enumerate_bound_to_a_name_is_read_through_the_name():
    source = BAR_BOUND_TO_A_NAME.replace("{bar}", "tqdm(enumerate(train_dataloader))")
    gate = next(i for i, line in enumerate(source.splitlines(), 1) if "% args.gradient_accumulation_steps" in line)
    assert [f.location.row for f in acc005(source)] == [gate]


def test_a_name_bound_to_an_endless_iterator_is_no_epoch():
    source = BAR_BOUND_TO_A_NAME.replace("{bar}", "enumerate(itertools.cycle(train_dataloader))")
    assert acc005("import itertools\n" + source) == []


# The library Trainer's own loop, copied into a project class: backward skips DDP's sync on the
# non-boundary micro-steps of a distributed run and runs plainly on all the others.
TRAINER_COPY = """
    import torch


    class CopiedTrainer:
        def train(self, model, train_dataloader, epochs):
            steps_in_epoch = len(train_dataloader)
            for epoch in range(epochs):
                for step, inputs in enumerate(train_dataloader):
                    if {sync_test}:
                        with model.no_sync():
                            loss = self.compute_loss(model, inputs)
                            loss.backward()
                    else:
                        loss = self.compute_loss(model, inputs)
                        loss.backward()
                    if (step + 1) % self.args.accum == 0 or (
                        steps_in_epoch <= self.args.accum and (step + 1) == steps_in_epoch
                    ):
                        self.optimizer.step()
                        model.zero_grad()
"""


def test_backward_split_by_an_and_test_of_the_window_still_runs_every_micro_step():
    """`if (step + 1) % k != 0 and distributed: ... else: ...`: the `else` runs on every micro-step
    of a single process, so the loop accumulates and its short-epoch-only clause drops the tail."""
    [f] = acc005(TRAINER_COPY.format(sync_test="(step + 1) % self.args.accum != 0 and self.args.local_rank != -1"))
    assert "fires only when an epoch is shorter than one window" in f.message


def test_backward_on_the_window_boundary_only_is_no_window():
    """The `else` of a plain `% k != 0` test runs once per window: no backward on every micro-step."""
    source = TRAINER_COPY.format(sync_test="(step + 1) % self.args.accum != 0").replace(
        "                        with model.no_sync():\n                            loss = self.compute_loss(model, inputs)\n"
        "                            loss.backward()\n", "                        pass\n")
    assert "pass" in source
    assert acc005(source) == []
