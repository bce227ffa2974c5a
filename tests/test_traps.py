"""The false-positive traps listed in DESIGN.md, one test each, plus non-training code that looks
like a gate or an accumulation. Every case here is correct code and must produce no findings
(the last DESIGN trap instead checks that no `.detach()` fix lands on a value that is backward-ed)."""

from __future__ import annotations

import textwrap

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of


def findings(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, path="trap.py", dedent=True)}


def assert_clean(source: str) -> None:
    got = findings(source)
    assert got == set(), f"{sorted(got)}\n{textwrap.dedent(source)}"


# --- decoder inputs and recurrent state ---------------------------------------------------------------


def test_decoder_input_from_argmax_carries_no_graph():
    assert_clean("""\
        hidden = model.init_hidden(batch_size)
        inp = start_tokens
        for step in range(num_steps):
            hidden = hidden.detach()
            logits, hidden = model(inp, hidden)
            loss = criterion(logits, targets[step]) / accum_steps
            loss.backward()
            inp = logits.argmax(dim=-1)
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_decoder_input_from_torch_argmax_and_max_indices():
    assert_clean("""\
        def train(model, optimizer, targets, num_steps, accum_steps):
            hidden = torch.zeros(1, 32, 256)
            inp = torch.zeros(32, dtype=torch.long)
            prev = torch.zeros(32, dtype=torch.long)
            for step in range(num_steps):
                hidden = hidden.detach()
                logits, hidden = model(inp, prev, hidden)
                loss = F.cross_entropy(logits, targets[step]) / accum_steps
                loss.backward()
                inp = torch.argmax(logits, dim=-1)
                _, prev = logits.max(dim=-1)
                if (step + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
    """)


def test_decoder_input_from_topk_indices_carries_no_graph():
    assert_clean("""\
        decoder_hidden = encoder_hidden.detach()
        decoder_input = torch.tensor([[SOS_token]], device=device)
        for di in range(target_length):
            decoder_hidden = decoder_hidden.detach()
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden)
            loss = criterion(decoder_output, target_tensor[di]) / accum_steps
            loss.backward()
            topv, topi = decoder_output.topk(1)
            decoder_input = topi.squeeze()
            if (di + 1) % accum_steps == 0:
                decoder_optimizer.step()
                decoder_optimizer.zero_grad()
    """)


def test_teacher_forcing_from_targets_carries_no_graph():
    assert_clean("""\
        hidden = torch.zeros(num_layers, batch_size, hidden_size)
        decoder_input = target_tensor[0]
        for t in range(1, target_length):
            hidden = hidden.detach()
            output, hidden = decoder(decoder_input, hidden)
            loss = criterion(output, target_tensor[t]) / accum_steps
            loss.backward()
            decoder_input = target_tensor[t]  # teacher forcing
            if t % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_hidden_reinitialised_every_batch_needs_no_detach():
    assert_clean("""\
        for epoch in range(num_epochs):
            for i, (x, y) in enumerate(train_loader):
                hidden = model.init_hidden(x.size(0))
                output, hidden = model(x, hidden)
                loss = criterion(output.view(-1, ntokens), y.view(-1)) / accum_steps
                loss.backward()
                if (i + 1) % accum_steps == 0 or i + 1 == len(train_loader):
                    optimizer.step()
                    optimizer.zero_grad()
    """)


def test_lstm_state_reinitialised_with_zeros_every_batch():
    assert_clean("""\
        class Trainer:
            def train_epoch(self):
                for i, (x, y) in enumerate(self.loader):
                    h = torch.zeros(self.layers, x.size(0), self.hidden)
                    c = torch.zeros(self.layers, x.size(0), self.hidden)
                    out, (h, c) = self.lstm(x, (h, c))
                    loss = self.criterion(self.head(out), y) / self.accum_steps
                    loss.backward()
                    if (i + 1) % self.accum_steps == 0 or i + 1 == len(self.loader):
                        self.optimizer.step()
                        self.optimizer.zero_grad()
    """)


def test_full_bptt_backward_after_sequence_loop():
    assert_clean("""\
        for i, (inputs, targets) in enumerate(loader):
            hidden = torch.zeros(1, inputs.size(1), hidden_size)
            loss = 0
            for t in range(inputs.size(0)):
                output, hidden = rnn(inputs[t], hidden)
                loss = loss + criterion(output, targets[t])
            (loss / accum_steps).backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """)


# --- accumulators backward-ed later, retain_graph with a second pass ------------------------------------


def test_accumulator_backwarded_after_inner_loop():
    assert_clean("""\
        for batch in loader:
            optimizer.zero_grad()
            loss = 0
            for x, y in zip(batch.x.chunk(accum_steps), batch.y.chunk(accum_steps)):
                loss += criterion(model(x), y) / accum_steps
            loss.backward()
            optimizer.step()
    """)


def test_window_loss_summed_then_backwarded_once_per_window():
    assert_clean("""\
        window_loss = 0.0
        for i, (x, y) in enumerate(loader):
            window_loss = window_loss + criterion(model(x), y) / accum_steps
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                window_loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                window_loss = 0.0
    """)


def test_retain_graph_on_first_of_two_losses():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            out = model(x)
            loss_cls = cls_criterion(out, y) / accum_steps
            loss_reg = reg_criterion(out, y) / accum_steps
            loss_cls.backward(retain_graph=True)
            cls_grad_norm = sum(p.grad.norm() for p in model.parameters())  # read between the passes
            loss_reg.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_gan_retain_graph_for_generator_pass():
    assert_clean("""\
        for epoch in range(num_epochs):
            for i, (real, _) in enumerate(dataloader):
                noise = torch.randn(real.size(0), nz, 1, 1, device=device)
                fake = netG(noise)
                optimizerD.zero_grad()
                errD_real = criterion(netD(real), real_label)
                errD_fake = criterion(netD(fake), fake_label)
                errD = errD_real + errD_fake
                errD.backward(retain_graph=True)
                optimizerD.step()
                optimizerG.zero_grad()
                errG = criterion(netD(fake), real_label)
                errG.backward()
                optimizerG.step()
                if i % 50 == 0:
                    print(f"[{epoch}][{i}] D {errD.item():.4f} G {errG.item():.4f}")
    """)


# --- frameworks that honour the contract -----------------------------------------------------------------


def test_accelerate_accumulate_with_prepared_objects():
    assert_clean("""\
        def main(cfg):
            accelerator = Accelerator(gradient_accumulation_steps=cfg.grad_accum)
            model, optimizer, train_dl, lr_scheduler = accelerator.prepare(model, optimizer, train_dl, lr_scheduler)
            for epoch in range(cfg.epochs):
                model.train()
                for batch in train_dl:
                    with accelerator.accumulate(model):
                        outputs = model(**batch)
                        loss = outputs.loss
                        accelerator.backward(loss)
                        if accelerator.sync_gradients:
                            accelerator.clip_grad_norm_(model.parameters(), 1.0)
                        optimizer.step()
                        lr_scheduler.step()
                        optimizer.zero_grad()
    """)


def test_accelerator_backward_divides_under_hand_gate():
    assert_clean("""\
        accelerator = Accelerator(gradient_accumulation_steps=accum_steps)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for i, (x, y) in enumerate(loader):
            with accelerator.autocast():
                loss = criterion(model(x), y)
            accelerator.backward(loss)
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """)


# --- windows without an epoch end ----------------------------------------------------------------------


def test_nanogpt_inner_micro_loop_has_no_partial_window():
    assert_clean("""\
        scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
        X, Y = get_batch("train")
        while True:
            lr = get_lr(iter_num) if decay_lr else learning_rate
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr
            for micro_step in range(gradient_accumulation_steps):
                if ddp:
                    model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch("train")
                scaler.scale(loss).backward()
            if grad_clip != 0.0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            if iter_num % log_interval == 0 and master_process:
                lossf = loss.item() * gradient_accumulation_steps
                print(f"iter {iter_num}: loss {lossf:.4f}")
            iter_num += 1
            if iter_num > max_iters:
                break
    """)


def test_range_max_steps_over_endless_iterator():
    assert_clean("""\
        train_iter = iter(infinite_loader)
        for step in range(max_steps):
            x, y = next(train_iter)
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
    """)


def test_enumerate_over_cycled_loader_has_no_epoch_end():
    assert_clean("""\
        for step, (x, y) in enumerate(itertools.cycle(train_loader)):
            if step >= max_steps:
                break
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
    """)


# --- scaled by other means -------------------------------------------------------------------------------


def test_loss_divided_by_token_count():
    assert_clean("""\
        for step, batch in enumerate(loader):
            logits = model(batch["input_ids"])
            loss_sum = F.cross_entropy(logits.view(-1, vocab), batch["labels"].view(-1), reduction="sum")
            loss = loss_sum / num_tokens_in_window
            loss.backward()
            if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_sum_reduced_loss_normalised_later_on_grads():
    assert_clean("""\
        tokens_seen = 0
        for step, batch in enumerate(loader):
            logits = model(batch["input_ids"])
            loss = F.cross_entropy(logits.view(-1, vocab), batch["labels"].view(-1), reduction="sum")
            tokens_seen += (batch["labels"] != -100).sum().item()
            loss.backward()
            if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad /= tokens_seen
                optimizer.step()
                optimizer.zero_grad()
                tokens_seen = 0
    """)


DIVISIONS = {
    "in_place_div_assign": ("loss = criterion(model(x), y)", "loss /= accum_steps", "loss.backward()"),
    "in_place_div_": ("loss = criterion(model(x), y)", "loss.div_(accum_steps)", "loss.backward()"),
    "k_times_target_len": ("loss = criterion(model(x), y)", "loss = loss / (accum_steps * target_len)", "loss.backward()"),
    "variable_assigned_from_k": ("n_acc = accum_steps", "loss = criterion(model(x), y) / n_acc", "loss.backward()"),
    "reciprocal_factor": ("scale = 1.0 / accum_steps", "loss = criterion(model(x), y) * scale", "loss.backward()"),
    "division_at_backward": ("loss = criterion(model(x), y)", "pass", "(loss / accum_steps).backward()"),
    "amp_division_in_scale": ("loss = criterion(model(x), y)", "pass", "scaler.scale(loss / accum_steps).backward()"),
}


@pytest.mark.parametrize("name", list(DIVISIONS))
def test_division_spellings_are_scaled(name):
    first, second, backward = DIVISIONS[name]
    source = f"""\
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(loader):
        {first}
        {second}
        {backward}
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""
    if "scaler" in backward:
        source = source.replace("optimizer.step()", "scaler.step(optimizer)\n            scaler.update()")
    assert_clean(source)


def test_division_in_a_helper_function():
    assert_clean("""\
        def compute_loss(model, batch, accum_steps):
            x, y = batch
            loss = F.cross_entropy(model(x), y)
            return loss / accum_steps


        def train(model, optimizer, loader, accum_steps):
            for i, batch in enumerate(loader):
                loss = compute_loss(model, batch, accum_steps)
                loss.backward()
                if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                    optimizer.step()
                    optimizer.zero_grad()
    """)


def test_division_in_a_helper_method_using_self_k():
    assert_clean("""\
        class Trainer:
            def compute_loss(self, batch):
                x, y = batch
                return self.criterion(self.model(x), y) / self.grad_accum

            def fit(self):
                for i, batch in enumerate(self.loader):
                    loss = self.compute_loss(batch)
                    loss.backward()
                    if (i + 1) % self.grad_accum == 0 or i + 1 == len(self.loader):
                        self.optimizer.step()
                        self.optimizer.zero_grad()
    """)


def test_division_in_a_nested_closure():
    assert_clean("""\
        def train(model, optimizer, loader, accum_steps):
            def step_loss(x, y):
                return F.mse_loss(model(x), y) / accum_steps

            for i, (x, y) in enumerate(loader):
                loss = step_loss(x, y)
                loss.backward()
                if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                    optimizer.step()
                    optimizer.zero_grad()
    """)


def test_grads_rescaled_after_window_with_p_grad_div():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                for p in model.parameters():
                    p.grad.div_(accum_steps)
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_grads_rescaled_after_window_with_p_grad_div_assign():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                for p in model.parameters():
                    p.grad /= accum_steps
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_grads_rescaled_with_multiply_grads():
    assert_clean("""\
        def train_step(self, samples):
            for i, sample in enumerate(samples):
                loss, sample_size = self.criterion(self.model, sample)
                loss.backward()
                if (i + 1) % self.update_freq == 0 or i + 1 == len(samples):
                    self.optimizer.multiply_grads(1.0 / self.update_freq)
                    self.optimizer.step()
                    self.optimizer.zero_grad()
    """)


# --- gate spellings that must not confuse the window --------------------------------------------------


def test_gate_with_early_continue_and_flush():
    assert_clean("""\
        for epoch in range(num_epochs):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
                if (i + 1) % accum_steps != 0:
                    continue
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            optimizer.step()
            optimizer.zero_grad()
    """)


def test_gate_with_early_continue_and_end_clause():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps != 0 and i + 1 != len(loader):
                continue
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    """)


def test_negated_flag_gate():
    assert_clean("""\
        for epoch in range(num_epochs):
            for i, (x, y) in enumerate(loader):
                accumulating = (i + 1) % accum_steps != 0
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
                if not accumulating:
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
            optimizer.step()
            optimizer.zero_grad()
    """)


def test_negated_flag_with_continue():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            sync = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
            if not sync:
                continue
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    """)


def test_boolean_computed_earlier():
    assert_clean("""\
        def train(model, optimizer, scheduler, loader, args):
            for step, batch in enumerate(loader):
                is_update_step = (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(loader)
                loss = model(**batch).loss / args.gradient_accumulation_steps
                loss.backward()
                if is_update_step:
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
    """)


# --- DDP sync controlled by other means ----------------------------------------------------------------


DDP = "model = DistributedDataParallel(net.to(rank), device_ids=[rank])\n"


def test_no_sync_via_require_backward_grad_sync():
    assert_clean(DDP + textwrap.dedent("""\
        for i, (x, y) in enumerate(loader):
            model.require_backward_grad_sync = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """))


def test_no_sync_context_kept_in_a_variable():
    assert_clean(DDP + textwrap.dedent("""\
        for i, (x, y) in enumerate(loader):
            last = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
            sync_ctx = contextlib.nullcontext() if last else model.no_sync()
            with sync_ctx:
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
            if last:
                optimizer.step()
                optimizer.zero_grad()
    """))


def test_no_sync_from_a_helper_that_returns_it():
    assert_clean(DDP + textwrap.dedent("""\
        def maybe_no_sync(model, sync):
            return contextlib.nullcontext() if sync else model.no_sync()


        for i, (x, y) in enumerate(loader):
            sync = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
            with maybe_no_sync(model, sync):
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
            if sync:
                optimizer.step()
                optimizer.zero_grad()
    """))


def test_fsdp_set_requires_gradient_sync():
    assert_clean("""\
        fully_shard(model)
        for i, (x, y) in enumerate(loader):
            is_last = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
            model.set_requires_gradient_sync(is_last)
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if is_last:
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_fabric_no_backward_sync():
    assert_clean("""\
        fabric = Fabric(strategy="ddp", devices=4)
        model, optimizer = fabric.setup(model, optimizer)
        loader = fabric.setup_dataloaders(loader)
        for i, (x, y) in enumerate(loader):
            is_accumulating = (i + 1) % accum_steps != 0 and i + 1 != len(loader)
            with fabric.no_backward_sync(model, enabled=is_accumulating):
                loss = criterion(model(x), y) / accum_steps
                fabric.backward(loss)
            if not is_accumulating:
                optimizer.step()
                optimizer.zero_grad()
    """)


# --- a detach fix must never land on a value that is backward-ed --------------------------------------


DETACH_TRAPS = {
    "window_sum_backwarded_in_gate": ("window_loss", """\
        window_loss = 0.0
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            window_loss = window_loss + loss
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                window_loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                window_loss = 0.0
    """),
    "kept_terms_backwarded_at_window_end": ("kl", """\
        kl_terms = []
        for i, (x, y) in enumerate(loader):
            out, kl = model(x)
            loss = criterion(out, y) / accum_steps
            loss.backward(retain_graph=True)
            kl_terms.append(kl)
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                torch.stack(kl_terms).sum().backward()
                optimizer.step()
                optimizer.zero_grad()
                kl_terms = []
    """),
    "total_backwarded_after_loop": ("total", """\
        for epoch in range(num_epochs):
            total = 0.0
            for x, y in micro_batches:
                aux = aux_criterion(model.encoder(x))
                aux.backward(retain_graph=True)
                total += criterion(model(x), y) / len(micro_batches)
            total.backward()
            optimizer.step()
            optimizer.zero_grad()
    """),
}


@pytest.mark.parametrize("name", list(DETACH_TRAPS))
def test_no_detach_fix_on_backwarded_value(name):
    value, source = DETACH_TRAPS[name]
    source = textwrap.dedent(source)
    got = findings(source)
    assert not {c for c, _ in got} & {"ACC002", "ACC003"}, sorted(got)
    fixed = fix_source(source, "trap.py", unsafe_fixes=True).fixed_source
    if fixed is not None:
        assert f"{value}.detach()" not in fixed and "loss.detach()" not in fixed, fixed


# --- non-training code that looks like training ---------------------------------------------------------


def test_eval_loop_under_no_grad():
    assert_clean("""\
        def evaluate(model, loader, criterion):
            model.eval()
            total_loss = 0.0
            correct = 0
            with torch.no_grad():
                for i, (x, y) in enumerate(loader):
                    out = model(x)
                    total_loss += criterion(out, y)
                    preds.append(out)
                    correct += (out.argmax(1) == y).sum().item()
                    if (i + 1) % 10 == 0:
                        print(i)
            return total_loss / len(loader), correct / len(loader.dataset)
    """)


def test_metric_accumulation_in_training_loop():
    assert_clean("""\
        for epoch in range(num_epochs):
            running_loss, correct, seen = 0.0, 0, 0
            for i, (x, y) in enumerate(train_loader):
                optimizer.zero_grad()
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                pred = out.argmax(dim=1)
                correct += (pred == y).sum().item()
                seen += y.size(0)
            print(epoch, running_loss / len(train_loader), correct / seen)
    """)


def test_string_formatting_in_a_gate_like_if():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            if "%d" % i == "100":
                optimizer.step()
            else:
                optimizer.step()
            name = "step_%05d" % i
            if "%s" % name:
                writer.add_scalar(name, loss.item())
    """)


def test_logging_gate_without_step():
    assert_clean("""\
        for epoch in range(num_epochs):
            for i, (x, y) in enumerate(train_loader):
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                scheduler.step()
                if i % log_interval == 0:
                    print(f"epoch {epoch} batch {i} loss {loss.item():.4f}")
                if (i + 1) % save_every == 0:
                    torch.save(model.state_dict(), f"ckpt_{i}.pt")
    """)


def test_logging_gate_inside_accumulating_loop():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
            if i % log_interval == 0:
                print(f"step {i}: {loss.item() * accum_steps:.3f}")
    """)


def test_gradient_clipping_without_amp_is_not_clip_before_unscale():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
    """)


def test_bf16_autocast_without_scaler():
    assert_clean("""\
        for i, (x, y) in enumerate(loader):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = criterion(model(x), y) / accum_steps
            loss.backward()
            if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
    """)
