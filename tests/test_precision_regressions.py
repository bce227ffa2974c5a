"""False positives found on real public training code, each reduced to the construct that was
misread. Every case must stay clean; the neighbouring bug in each must still be found."""

import pytest

from tests.snippets import findings_of


def codes(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, path="case.py", dedent=True)}


CLEAN = {
    # Multiplying by k undoes Accelerate's division (the loss was normalised by a global token
    # count); only `/ k` or `* (1 / k)` is a division by k.
    "accelerate_multiplies_by_k": """
        acc = Accelerator(gradient_accumulation_steps=k)
        for b in loader:
            with acc.accumulate(model):
                loss = model(**b).loss
                loss = loss * k * acc.num_processes
                acc.backward(loss)
                opt.step()
                opt.zero_grad()
    """,
    # An early `continue` on "not at a boundary" gates what follows, even through a flag that
    # also fires at the end of the data.
    "continue_on_negated_flag_gates_scheduler": """
        for i, (x, y) in enumerate(loader):
            need_update = i == last or (i + 1) % k == 0
            (model(x, y) / k).backward()
            if need_update:
                opt.step()
                opt.zero_grad()
            if not need_update:
                continue
            sched.step()
    """,
    # A window of one micro-step is no accumulation.
    "k_bound_to_one": """
        K = 1
        while True:
            for _ in range(K):
                loss = model(next(it))
                loss.backward()
            opt.step()
            opt.zero_grad()
    """,
    # `.data` shares no graph (pytorch/examples word_language_model).
    "accumulating_dot_data": """
        total_loss = 0.0
        for batch, i in enumerate(range(0, n, bptt)):
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            opt.step()
            total_loss += loss.data
    """,
    # A value logged from a model method is not a state fed back into the forward pass
    # (nanoGPT's running_mfu).
    "logged_running_value_is_not_recurrent_state": """
        running_mfu = -1.0
        while True:
            wandb.log({"mfu": running_mfu * 100})
            for micro_step in range(gradient_accumulation_steps):
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
                X, Y = get_batch("train")
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            mfu = raw_model.estimate_mfu(batch_size * gradient_accumulation_steps, dt)
            running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
    """,
    # The module object is called, not differentiated: a loader unpacked beside it in
    # `model, loader = prepare(...)` and re-bound every epoch is no recurrent state.
    "loader_unpacked_with_the_model": """
        model, loader = prepare(model, loader)
        for epoch in range(3):
            loader = skip(loader)
            for batch in loader:
                loss = model(batch)
                loss.backward()
                opt.step()
                opt.zero_grad()
    """,
    # Zeroing at the start of each window (`i % k == 0`) runs once per window, like the step.
    "zero_grad_at_window_start": """
        for i, (x, y) in enumerate(loader):
            if i % k == 0:
                opt.zero_grad()
            loss = crit(model(x), y) / k
            loss.backward()
            if (i + 1) % k == 0 or i + 1 == len(loader):
                opt.step()
    """,
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_real_code_construct_stays_clean(name):
    assert codes(CLEAN[name]) == set()


def test_multiplying_by_reciprocal_of_k_still_counts_as_a_division():
    assert codes("""
        acc = Accelerator(gradient_accumulation_steps=k)
        for b in loader:
            with acc.accumulate(model):
                loss = model(**b).loss * (1 / k)
                acc.backward(loss)
                opt.step()
                opt.zero_grad()
    """) == {("ACC010", 6)}


def test_scheduler_before_the_continue_gate_is_still_reported():
    assert codes("""
        sched = get_linear_schedule_with_warmup(opt, 0, len(loader) // k)
        for i, (x, y) in enumerate(loader):
            need_update = i == last or (i + 1) % k == 0
            (model(x, y) / k).backward()
            sched.step()
            if need_update:
                opt.step()
                opt.zero_grad()
    """) == {("ACC008", 6)}


def test_k_bound_to_four_is_still_accumulation():
    assert codes("""
        K = 4
        while True:
            for _ in range(K):
                loss = model(next(it))
                loss.backward()
            opt.step()
            opt.zero_grad()
    """) == {("ACC001", 6)}


def test_losses_kept_in_a_dict_of_lists_are_reported():
    assert codes("""
        epoch_losses = {"g": []}
        for x in loader:
            opt.zero_grad()
            loss = model(x)
            loss.backward()
            opt.step()
            epoch_losses["g"].append(loss)
    """) == {("ACC002", 8)}


def test_lightning_automatic_loss_kept_on_self_is_reported():
    # Lightning backward-s what training_step returns; the list keeps every step's graph.
    assert codes("""
        class M(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.crit(self(batch[0]), batch[1])
                self.losses.append(loss)
                return loss
    """) == {("ACC002", 5)}


def test_fsdp_accumulating_without_sync_control_is_not_acc009():
    # no_sync() under FSDP keeps whole unsharded gradients on every rank: skipping it saves memory
    assert codes("""
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        model = FSDP(net)
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """) == set()


def test_fsdp2_with_requires_gradient_sync_is_clean():
    assert codes("""
        from torch.distributed.fsdp import fully_shard
        model = fully_shard(net)
        for i, (x, y) in enumerate(loader):
            model.set_requires_gradient_sync((i + 1) % accum_steps == 0)
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """) == set()


_RESCALED_RECIPE = """
    class Recipe:
        def __init__(self, cfg):
            self._grad_scaler = {binding}
            self._k = cfg.gradient_accumulation_steps

        def train(self):
            num_tokens = 0
            for idx, batch in enumerate(self._loader):
                num_tokens += (batch["labels"] != -100).sum()
                loss = self._loss_fn(self._model(batch["tokens"]), batch["labels"])
                loss.backward()
                if (idx + 1) % self._k == 0:
                    self._grad_scaler(self._model.parameters(), 1 / num_tokens)
                    self._opt.step()
                    self._opt.zero_grad()
                    num_tokens = 0
"""


@pytest.mark.parametrize("binding", [
    "training.scale_grads_",  # torchtune's in-place spelling, called through an attribute
    "torch.compile(training.scale_grads_)",
    "scale_grads",
])
def test_gradients_rescaled_through_an_alias_need_no_loss_division(binding):
    assert "ACC001" not in {code for code, _ in codes(_RESCALED_RECIPE.format(binding=binding))}


@pytest.mark.parametrize("binding", ["training.clip_grads_", "torch.compile(training.log_grads)"])
def test_an_alias_of_anything_else_leaves_the_undivided_loss_reported(binding):
    assert ("ACC001", 12) in codes(_RESCALED_RECIPE.format(binding=binding))
