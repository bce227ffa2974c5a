"""Wrong fixes found by running `--fix --unsafe-fixes` over public training code, each in its
general shape (written here from scratch, not copied): a `.detach()` must never land on a value
that is not a tensor. Where the code shows or suggests a number (built from `.item()`, `float()`,
options, a learning rate, a batch size, a callable annotated to return an int) no fix is offered
and nothing is reported; where the type is unknown and nothing ties the value to the forward pass
no fix is offered either. Every remaining fix is applied, compiled, re-checked and applied again."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of
from rule_cases import src


def findings(source: str, filename: str = "case.py", select: frozenset = frozenset({"ACC002", "ACC003"})):
    return findings_of(source, path=filename, select=set(select))


def detach_fixes(source: str, filename: str = "case.py") -> list[str]:
    """The lines `--fix --unsafe-fixes` would change, as (old -> new) strings."""
    fixed = fix_source(source, filename, select={"ACC002", "ACC003"}, unsafe_fixes=True).fixed_source
    if fixed is None:
        return []
    old, new = source.splitlines(), fixed.splitlines()
    return [line for line in new if line not in old]


def assert_no_fix_on(source: str, number: str, filename: str = "case.py") -> None:
    """No finding of ACC002/ACC003 offers a fix that calls a tensor method on `number`."""
    for finding in findings(source, filename):
        assert finding.fix is None or f"{number}.detach()" not in str(finding.fix), (finding.message, finding.fix)
    assert not any(f"{number}.detach()" in line or f"{number}).detach()" in line for line in detach_fixes(source, filename))


# --- 1. a count read off the batch (pytorch/examples' snli: `n_total += batch.batch_size`) -----------

COUNT_FROM_BATCH = src("""
    def train(model, raw_iter, criterion, optimizer):
        n_correct, n_total = 0, 0
        for raw in raw_iter:
            batch = prepare(raw)
            answer = model(batch)
            n_correct += (answer.argmax(1) == batch.label).sum().item()
            n_total += batch.batch_size
            loss = criterion(answer, batch.label)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(100.0 * n_correct / n_total)
""")


def test_a_count_read_off_the_batch_is_a_number_not_a_kept_graph():
    assert_no_fix_on(COUNT_FROM_BATCH, "batch.batch_size")
    assert findings(COUNT_FROM_BATCH) == []


def test_a_count_made_by_a_helper_from_the_batch_is_not_reported():
    # Nothing ties `count_tokens(batch)` to the forward pass: no finding, and surely no `.detach()`.
    source = COUNT_FROM_BATCH.replace("n_total += batch.batch_size", "n_total += count_tokens(batch)")
    assert_no_fix_on(source, "count_tokens(batch)")
    assert findings(source) == []


def test_the_loss_kept_beside_the_count_is_still_reported_and_fixed():
    source = COUNT_FROM_BATCH.replace("        loss.backward()\n", "        loss.backward()\n        seen += loss\n")
    source = source.replace("n_correct, n_total = 0, 0", "n_correct, n_total, seen = 0, 0, 0.0")
    got = findings(source)
    assert [(f.code, f.location.row) for f in got] == [("ACC002", 11)]
    assert got[0].fix is not None and got[0].fix.applicability == "safe"
    assert detach_fixes(source) == ["        seen += loss.detach()"]


# --- 2, 3. a learning rate scaled by the sequence length (awd-lstm main.py and finetune.py) --------

LR_TRACE = src("""
    import numpy as np


    def train(model, train_data, criterion, optimizer, args):
        lr_trace = []
        i = 0
        while i < train_data.size(0) - 1:
            seq_len = max(5, int(np.random.normal(args.bptt, 5)))
            lr2 = current_lr(optimizer)
            lr_trace.append(lr2 * seq_len / args.bptt)
            data, targets = get_batch(train_data, i, seq_len)
            loss = criterion(model(data), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            i += seq_len
        print(lr_trace)
""")


def test_a_learning_rate_scaled_by_the_sequence_length_gets_no_detach():
    assert_no_fix_on(LR_TRACE, "(lr2 * seq_len / args.bptt)")
    assert findings(LR_TRACE) == []


def test_a_learning_rate_read_from_param_groups_gets_no_detach():
    source = LR_TRACE.replace("lr2 = current_lr(optimizer)", "lr2 = optimizer.param_groups[0]['lr']")
    source = source.replace("lr_trace.append(lr2 * seq_len / args.bptt)", "lr_trace.append(lr2 * seq_len / args.bptt)\n        lrs[i] = lr2")
    assert_no_fix_on(source, "(lr2 * seq_len / args.bptt)")
    assert_no_fix_on(source, "lr2")
    assert findings(source) == []


# --- 4. a schedule value kept per step (rosinality projector.py: `lr = get_lr(t, args.lr)`) ---------

SCHEDULE = src("""
    import math


    def get_lr(t, initial_lr, rampdown=0.25):
        lr_ramp = min(1, (1 - t) / rampdown)
        lr_ramp = 0.5 - 0.5 * math.cos(lr_ramp * math.pi)
        return initial_lr * lr_ramp


    def project(generator, latent, percept, optimizer, args):
        lrs = []
        for i in range(args.step):
            lr = get_lr(i / args.step, args.lr)
            optimizer.param_groups[0]["lr"] = lr
            image = generator(latent * lr)
            loss = percept(image).sum()
            lrs.append(lr)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(lrs)
        return image
""")


def test_a_schedule_value_from_a_local_function_is_a_number():
    assert_no_fix_on(SCHEDULE, "lr")
    assert findings(SCHEDULE) == []


def test_a_schedule_value_from_an_unknown_function_gets_no_detach():
    source = SCHEDULE.replace("lr = get_lr(i / args.step, args.lr)", "lr = schedule_at(i / args.step, args.lr)")
    assert_no_fix_on(source, "lr")


# --- 5. a temperature annealed with builtin max() (DALLE-pytorch train_vae.py) -----------------------

TEMPERATURE = src("""
    import argparse
    import math

    parser = argparse.ArgumentParser()
    parser.add_argument("--starting_temp", type=float, default=1.0)
    args = parser.parse_args()
    STARTING_TEMP = args.starting_temp
    TEMP_MIN = args.temp_min
    ANNEAL_RATE = args.anneal_rate

    temp = STARTING_TEMP
    global_step = 0
    for epoch in range(10):
        for images in loader:
            loss, recons = vae(images, return_loss=True, temp=temp)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if global_step % 100 == 0:
                temp = max(temp * math.exp(-ANNEAL_RATE * global_step), TEMP_MIN)
            global_step += 1
""")


@pytest.mark.parametrize("update", [
    "temp = max(temp * math.exp(-ANNEAL_RATE * global_step), TEMP_MIN)",
    "temp = anneal(temp, global_step)",  # an unknown function of a temperature that starts as an option
])
def test_an_annealed_temperature_gets_no_detach(update):
    source = TEMPERATURE.replace("temp = max(temp * math.exp(-ANNEAL_RATE * global_step), TEMP_MIN)", update)
    assert_no_fix_on(source, "temp")


# --- 6. a probability tuned by a helper object (rosinality train.py: `ada_aug_p = ada.tune(pred)`) --

TUNED = src("""
    def train(args, loader, generator, discriminator, g_optim, d_optim, ada):
        ada_aug_p = args.augment_p if args.augment_p > 0 else 0.0
        for real_img in loader:
            fake_img = generator(noise(real_img))
            real_img_aug = augment(real_img, ada_aug_p)
            fake_pred = discriminator(augment(fake_img, ada_aug_p))
            real_pred = discriminator(real_img_aug)
            d_loss = d_logistic_loss(real_pred, fake_pred)
            d_optim.zero_grad()
            d_loss.backward()
            d_optim.step()
            ada_aug_p = ada.tune(real_pred)
""")


def test_a_tuned_probability_that_starts_as_an_option_gets_no_detach():
    assert_no_fix_on(TUNED, "ada_aug_p")


# --- 7. a length counted by a callable annotated to return an int (TinyLlama's speed monitor) ------

SPEED_MONITOR = src("""
    from typing import Any, Callable


    class SpeedMonitor:
        def __init__(self, length_fn: Callable[[Any], int]):
            self.length_fn = length_fn
            self.total_lengths = 0

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.total_lengths += self.length_fn(batch)
""")


def test_a_length_counted_by_an_int_callable_is_a_number():
    assert_no_fix_on(SPEED_MONITOR, "self.length_fn(batch)")
    assert findings(SPEED_MONITOR) == []


def test_an_unannotated_counter_on_self_gets_no_detach():
    source = SPEED_MONITOR.replace("length_fn: Callable[[Any], int]", "length_fn")
    assert_no_fix_on(source, "self.length_fn(batch)")


def test_a_loss_kept_on_self_in_the_same_callback_keeps_its_fix():
    source = SPEED_MONITOR.replace(
        "        self.total_lengths += self.length_fn(batch)\n",
        "        self.total_lengths += self.length_fn(batch)\n"
        "\n"
        "    def training_step(self, batch):\n"
        "        loss = self.model(batch).mean()\n"
        "        loss.backward()\n"
        "        self.losses.append(loss)\n",
    )
    got = findings(source)
    assert [(f.code, f.location.row) for f in got] == [("ACC002", 15)]
    assert detach_fixes(source) == ["        self.losses.append(loss.detach())"]


# --- multi-module: the number comes from a helper in another file -------------------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src(text))


def test_a_number_returned_by_a_helper_in_another_module(tmp_path):
    _write(tmp_path, {
        "stats.py": """
            def tokens_in(batch) -> int:
                return int(batch["attention_mask"].sum())
        """,
        "train.py": """
            from stats import tokens_in


            def train(model, loader, optimizer):
                seen = 0
                for raw in loader:
                    batch = to_device(raw)
                    loss = model(**batch).loss
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    seen += tokens_in(batch)
                return seen
        """,
    })
    path = tmp_path / "train.py"
    assert_no_fix_on(path.read_text(), "tokens_in(batch)", str(path))
    assert findings(path.read_text(), str(path)) == []


# --- from the issue-9 sweep (run5): values on `self` that are not this step's graph ------------------

def test_text_logs_extended_in_a_training_step_are_not_graphs():
    # trl's GOLD trainer: decoded prompt strings gathered across processes for logging.
    source = src("""
        class GoldTrainer(Trainer):
            def training_step(self, model, inputs, n=None):
                loss = super().training_step(model, inputs, n)
                prompts, completions = self._buffered_text[self._step % 4]
                self._logs["prompt"].extend(gather_object(prompts))
                self._logs["completion"].extend(gather_object(completions))
                return loss
    """)
    assert findings(source) == []
    assert detach_fixes(source) == []


def test_samples_queued_by_a_method_named_for_training_are_not_graphs():
    # torchtitan's RL batcher: rollout samples (a dataclass) queued for packing; no model, no backward.
    source = src("""
        import dataclasses


        class Batcher:
            def add_training_samples(self, *, training_sample_group: TrainingSampleGroup) -> None:
                if self.strip_metrics:
                    training_sample_group = dataclasses.replace(training_sample_group, metrics=None)
                self._groups_for_next_batch.append(training_sample_group)
    """)
    assert findings(source) == []


def test_a_loss_queued_by_a_training_step_on_self_is_still_reported():
    source = src("""
        class Trainer:
            def train_step(self, batch):
                loss = self.model(batch).mean()
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self._queue.append(loss)
    """)
    got = findings(source)
    assert [(f.code, f.location.row) for f in got] == [("ACC002", 7)]
    assert detach_fixes(source) == ["        self._queue.append(loss.detach())"]


# --- ACC005: the end-of-data clause is safe only when nothing but the step hangs on the gate ----------

HF_LOOP = src("""
    from torch.utils.data import DataLoader
    from tqdm import tqdm


    def train(args, model, train_dataset, optimizer, scheduler):
        train_dataloader = DataLoader(train_dataset, batch_size=args.batch_size)
        global_step = 0
        for epoch in range(args.epochs):
            epoch_iterator = tqdm(train_dataloader)
            for step, batch in enumerate(epoch_iterator):
                loss = model(**batch)[0] / args.gradient_accumulation_steps
                loss.backward()
                if (step + 1) % args.gradient_accumulation_steps == 0:
                    optimizer.step()
                    scheduler.step()
                    model.zero_grad()
                    global_step += 1
                    if global_step % args.logging_steps == 0:
                        log(global_step, loss.item())
                if args.max_steps > 0 and global_step > args.max_steps:
                    break
""")


def test_end_clause_is_not_offered_where_step_bookkeeping_shares_the_gate():
    # LoRA's vendored transformers examples: `global_step` drives logging, saving and max_steps;
    # one more step per epoch shifts them all (and the schedule sized in len // k): report only.
    got = findings(HF_LOOP, select=frozenset({"ACC005"}))
    assert [(f.code, f.location.row) for f in got] == [("ACC005", 13)]
    assert got[0].fix is None


def test_end_clause_stays_safe_when_only_the_step_hangs_on_the_gate():
    source = HF_LOOP.replace("                global_step += 1\n", "").replace(
        "                if global_step % args.logging_steps == 0:\n                    log(global_step, loss.item())\n", "")
    got = findings(source, select=frozenset({"ACC005"}))
    assert [(f.code, f.location.row) for f in got] == [("ACC005", 13)]
    assert got[0].fix is not None and got[0].fix.applicability == "safe"
    fixed = fix_source(source, "case.py", select={"ACC005"}).fixed_source
    assert fixed is not None
    assert "if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(epoch_iterator):" in fixed
    compile(fixed, "case.py", "exec")


# --- ACC010: removing the hand division must not leave code that undoes it --------------------------

ENGINE_LOOP = src("""
    import deepspeed


    def train(args, net, train_set, criterion, ds_config):
        gas = ds_config["gradient_accumulation_steps"]
        model_engine, optimizer, train_loader, _ = deepspeed.initialize(
            args=args, model=net, model_parameters=net.parameters(), training_data=train_set, config=ds_config
        )
        for step, (x, y) in enumerate(train_loader):
            loss = criterion(model_engine(x), y)
            loss = loss / gas
            model_engine.backward(loss)
            loss_item = loss.item() * gas
            model_engine.step()
            print(loss_item)
""")


def test_hand_division_undone_for_logging_gets_no_removal_fix():
    # DeepSpeedExamples' BingBertSquad: `loss_item = loss.item() * k` after the engine's backward;
    # removing the division would log k times the loss.
    got = findings(ENGINE_LOOP, select=frozenset({"ACC010"}))
    assert [(f.code, f.location.row) for f in got] == [("ACC010", 12)]
    assert got[0].fix is None


def test_hand_division_alone_keeps_its_unsafe_removal_fix():
    source = ENGINE_LOOP.replace("loss_item = loss.item() * gas", "loss_item = loss.item()")
    got = findings(source, select=frozenset({"ACC010"}))
    assert [(f.code, f.location.row) for f in got] == [("ACC010", 12)]
    assert got[0].fix is not None and got[0].fix.applicability == "unsafe"
    fixed = fix_source(source, "case.py", select={"ACC010"}, unsafe_fixes=True).fixed_source
    assert fixed is not None and "loss = loss / gas" not in fixed
    compile(fixed, "case.py", "exec")


def test_a_tensor_bound_to_a_name_that_usually_holds_a_number_is_still_kept():
    # `temp`, `step` are numbers only when nothing else is in sight: here `temp` is a model output.
    source = src("""
        def train(model, loader, optimizer):
            kept = []
            for x, y in loader:
                temp = model(x)
                loss = (temp - y).pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                kept.append(temp)
            print(len(kept))
    """)
    got = findings(source)
    assert [(f.code, f.location.row) for f in got] == [("ACC002", 9)]
    # a model output of unknown type (a tuple, a dict?): reported, with no `.detach()` offered
    assert fix_source(source, "case.py", select={"ACC002"}, unsafe_fixes=True).fixed_source is None
