"""Framework-specific cases for ACC006-ACC010 (and the rules frameworks silence).

Each case is a small inline loop. A line that must be reported ends with a marker comment
`# <ACCnnn` (several markers for several codes on one line); the expected set of (code, row) is
read from those markers, so each case is exactly: these findings, on these rows, nothing else.
Where DESIGN.md does not pin the report row down, the rows follow the rules' choice, which is
consistent with ACC001: ACC009 and ACC010 on the backward call (the tensor that reaches backward),
and ACC009 on the `with ...no_sync()` statement when that context wraps the backward alone.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from tests.snippets import findings_of

_MARK = re.compile(r"<(ACC\d{3})")


def expected(source: str) -> set[tuple[str, int]]:
    out = set()
    for row, line in enumerate(source.splitlines(), start=1):
        if "#" in line:
            out |= {(code, row) for code in _MARK.findall(line.split("#", 1)[1])}
    return out


def found(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, path="case.py")}


CASES: dict[str, str] = {}


def case(name: str, source: str) -> None:
    assert name not in CASES
    CASES[name] = textwrap.dedent(source)


# --- Accelerate ------------------------------------------------------------------------------

case("accelerate_accumulate_clean", """\
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""")

# accelerator.backward already divides by gradient_accumulation_steps: dividing by hand as well
# gives 1/k**2.
case("accelerate_accumulate_hand_division", """\
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            loss = loss / args.gradient_accumulation_steps
            accelerator.backward(loss)  # <ACC010
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""")

case("accelerate_division_inside_backward_call", """\
    accum = 8
    accelerator = Accelerator(gradient_accumulation_steps=accum)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        with accelerator.accumulate(model):
            accelerator.backward(criterion(model(x), y) / accum)  # <ACC010
            optimizer.step()
            optimizer.zero_grad()
""")

# accelerator.backward divides whenever gradient_accumulation_steps is set, with or without
# accumulate(); a hand-written gate with no hand division is then right.
case("accelerate_gas_hand_gate_no_division_clean", """\
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        accelerator.backward(loss)
        if (step + 1) % 4 == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""")

# A default Accelerator() does not divide: the old-style scripts divide by hand, correctly.
case("accelerate_default_hand_division_clean", """\
    accelerator = Accelerator()
    model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)
    for step, batch in enumerate(train_dataloader):
        loss = model(**batch).loss
        loss = loss / args.gradient_accumulation_steps
        accelerator.backward(loss)
        if step % args.gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
""")

case("accelerate_default_no_division", """\
    accelerator = Accelerator()
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    for step, batch in enumerate(train_dataloader):
        loss = model(**batch).loss
        accelerator.backward(loss)  # <ACC001
        if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(train_dataloader):
            optimizer.step()
            optimizer.zero_grad()
""")

case("accelerate_default_zero_grad_every_step", """\
    accelerator = Accelerator()
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    for step, batch in enumerate(train_dataloader):
        optimizer.zero_grad()  # <ACC007
        loss = model(**batch).loss / args.gradient_accumulation_steps
        accelerator.backward(loss)
        if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(train_dataloader):
            optimizer.step()
""")

case("accelerate_default_scheduler_every_step", """\
    accelerator = Accelerator()
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, 0, len(train_dataloader) // args.gradient_accumulation_steps)
    model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)
    for step, batch in enumerate(train_dataloader):
        loss = model(**batch).loss / args.gradient_accumulation_steps
        accelerator.backward(loss)
        if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(train_dataloader):
            optimizer.step()
            optimizer.zero_grad()
        lr_scheduler.step()  # <ACC008
""")

case("accelerate_retain_graph_single_backward", """\
    accelerator = Accelerator(gradient_accumulation_steps=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = criterion(model(x), y)
            accelerator.backward(loss, retain_graph=True)  # <ACC006
            optimizer.step()
            optimizer.zero_grad()
""")

# --- DeepSpeed -------------------------------------------------------------------------------

case("deepspeed_engine_clean", """\
    model_engine, optimizer, train_loader, _ = deepspeed.initialize(
        args=args, model=net, model_parameters=net.parameters(), training_data=train_set, config=ds_config
    )
    for step, (x, y) in enumerate(train_loader):
        loss = criterion(model_engine(x.to(model_engine.device)), y.to(model_engine.device))
        model_engine.backward(loss)
        model_engine.step()
""")

# The engine's backward divides by the configured gradient_accumulation_steps itself.
case("deepspeed_engine_hand_division", """\
    gas = ds_config["gradient_accumulation_steps"]
    model_engine, optimizer, train_loader, _ = deepspeed.initialize(
        args=args, model=net, model_parameters=net.parameters(), training_data=train_set, config=ds_config
    )
    for step, (x, y) in enumerate(train_loader):
        loss = criterion(model_engine(x), y)
        loss = loss / gas
        model_engine.backward(loss)  # <ACC010
        model_engine.step()
""")

# --- Lightning -------------------------------------------------------------------------------

case("lightning_automatic_clean", """\
    class Module(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    trainer = pl.Trainer(max_epochs=3, accumulate_grad_batches=4)
    trainer.fit(Module(), train_loader)
""")

# Automatic optimisation already normalises by accumulate_grad_batches.
case("lightning_automatic_hand_division", """\
    class Module(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            return loss / self.trainer.accumulate_grad_batches  # <ACC010

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

    trainer = pl.Trainer(max_epochs=3, accumulate_grad_batches=4)
    trainer.fit(Module(), train_loader)
""")

case("lightning_manual_clean", """\
    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.accum = 4

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            sch = self.lr_schedulers()
            x, y = batch
            loss = F.cross_entropy(self(x), y) / self.accum
            self.manual_backward(loss)
            if (batch_idx + 1) % self.accum == 0 or self.trainer.is_last_batch:
                self.clip_gradients(opt, gradient_clip_val=1.0)
                opt.step()
                sch.step()
                opt.zero_grad()
            self.log("train_loss", loss.detach())
""")

case("lightning_manual_zero_grad_every_step", """\
    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            opt.zero_grad()  # <ACC007
            x, y = batch
            loss = F.cross_entropy(self(x), y) / 4
            self.manual_backward(loss)
            if (batch_idx + 1) % 4 == 0 or self.trainer.is_last_batch:
                opt.step()
""")

case("lightning_manual_unscaled", """\
    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            x, y = batch
            loss = F.cross_entropy(self(x), y)
            self.manual_backward(loss)  # <ACC001
            if (batch_idx + 1) % 4 == 0 or self.trainer.is_last_batch:
                opt.step()
                opt.zero_grad()
""")

case("lightning_manual_scheduler_every_step", """\
    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            sch = self.lr_schedulers()
            x, y = batch
            loss = F.cross_entropy(self(x), y) / 4
            self.manual_backward(loss)
            if (batch_idx + 1) % 4 == 0 or self.trainer.is_last_batch:
                opt.step()
                opt.zero_grad()
            sch.step()  # schedule length not in sight (configure_optimizers): silent, DESIGN.md ACC008
""")

# --- DDP -------------------------------------------------------------------------------------

DDP_SETUP = """\
    model = DistributedDataParallel(net.cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
"""

case("ddp_without_no_sync", DDP_SETUP + """\
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()  # <ACC009
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""")

case("ddp_no_sync_if_else_clean", DDP_SETUP + """\
    for i, (x, y) in enumerate(loader):
        if (i + 1) % accum_steps != 0 and i + 1 != len(loader):
            with model.no_sync():
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
        else:
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
""")

case("ddp_nullcontext_variable_clean", DDP_SETUP + """\
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
        ctx = contextlib.nullcontext() if boundary else model.no_sync()
        with ctx:
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
        if boundary:
            optimizer.step()
            optimizer.zero_grad()
""")

case("ddp_no_sync_from_helper_clean", DDP_SETUP + """\
    def maybe_no_sync(model, boundary):
        return contextlib.nullcontext() if boundary else model.no_sync()

    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
        with maybe_no_sync(model, boundary):
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
        if boundary:
            optimizer.step()
            optimizer.zero_grad()
""")

case("ddp_require_backward_grad_sync_clean", DDP_SETUP + """\
    while True:
        for micro_step in range(accum_steps):
            model.require_backward_grad_sync = micro_step == accum_steps - 1
            x, y = get_batch()
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""")

# DDP registers the all-reduce during the forward pass: no_sync around the backward alone
# still synchronises every micro-step.
case("ddp_no_sync_around_backward_only", DDP_SETUP + """\
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
        loss = criterion(model(x), y) / accum_steps
        if boundary:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            with model.no_sync():  # <ACC009
                loss.backward()
""")

# The forward inside the no_sync block through a closure beside the loop (timm's `_forward()`).
case("ddp_no_sync_around_a_closure_forward_clean", DDP_SETUP + """\
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)

        def _forward():
            return criterion(model(x), y) / accum_steps

        if boundary:
            loss = _forward()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            with model.no_sync():
                loss = _forward()
                loss.backward()
""")

# A closure called inside that does not run the model is no forward.
case("ddp_no_sync_around_a_closure_that_does_not_forward", DDP_SETUP + """\
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
        loss = criterion(model(x), y) / accum_steps

        def _log():
            print(i)

        if boundary:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            with model.no_sync():  # <ACC009
                _log()
                loss.backward()
""")

# The flag set after the forward: DDP read the old value in the forward (build-nanogpt before its fix).
case("ddp_sync_flag_set_after_the_forward", DDP_SETUP + """\
    while True:
        for micro_step in range(accum_steps):
            x, y = get_batch()
            loss = criterion(model(x), y) / accum_steps
            model.require_backward_grad_sync = micro_step == accum_steps - 1  # <ACC009
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""")

case("ddp_sync_flag_set_after_the_forward_in_a_trainer", """\
    class Trainer:
        def __init__(self, net, rank):
            self.model = DistributedDataParallel(net.cuda(rank), device_ids=[rank])
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

        def fit(self, loader, accum_steps):
            for i, (x, y) in enumerate(loader):
                loss = criterion(self.model(x), y) / accum_steps
                self.model.require_backward_grad_sync = (i + 1) % accum_steps == 0  # <ACC009
                loss.backward()
                if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
                    self.optimizer.step()
                    self.optimizer.zero_grad()
""")

# Set again before a second forward of the same micro-step: that forward reads it.
case("ddp_sync_flag_set_between_two_forwards_clean", DDP_SETUP + """\
    while True:
        for micro_step in range(accum_steps):
            x, y = get_batch()
            warmup = model(x)
            model.require_backward_grad_sync = micro_step == accum_steps - 1
            loss = criterion(model(x), y) / accum_steps
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""")

case("ddp_without_accumulation_clean", DDP_SETUP + """\
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

case("fsdp_set_requires_gradient_sync_clean", """\
    model = fully_shard(net)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
        model.set_requires_gradient_sync(boundary)
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if boundary:
            optimizer.step()
            optimizer.zero_grad()
""")

case("fabric_no_backward_sync_clean", """\
    fabric = L.Fabric(strategy="ddp", devices=4)
    fabric.launch()
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(loader)
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % accum_steps == 0 or i + 1 == len(loader)
        with fabric.no_backward_sync(model, enabled=not boundary):
            loss = criterion(model(x), y) / accum_steps
            fabric.backward(loss)
        if boundary:
            optimizer.step()
            optimizer.zero_grad()
""")

# --- retain_graph ----------------------------------------------------------------------------

# Seed 003's correct form: two losses of one forward; the first backward must keep the graph.
# DESIGN.md ACC006: nothing reads the gradients between the two passes, so one backward of the
# summed losses gives the same gradients.
case("two_losses_first_retains_summable", """\
    for x, y in loader:
        features = backbone(x)
        cls_loss = criterion(head_a(features), y)
        aux_loss = aux_criterion(head_b(features), y)
        optimizer.zero_grad()
        cls_loss.backward(retain_graph=True)  # <ACC006
        aux_loss.backward()
        optimizer.step()
""")

case("gan_retain_graph_clean", """\
    for real, _ in loader:
        fake = generator(torch.randn(real.size(0), 64))
        d_loss = bce(discriminator(real), ones) + bce(discriminator(fake), zeros)
        opt_d.zero_grad()
        d_loss.backward(retain_graph=True)
        opt_d.step()
        g_loss = bce(discriminator(fake), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
""")

case("retain_graph_single_backward", """\
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward(retain_graph=True)  # <ACC006
        optimizer.step()
""")

# Seed 003's better form: sum the losses, backward once.
case("summed_losses_clean", """\
    for x, y in loader:
        features = backbone(x)
        loss = criterion(head_a(features), y) + 0.3 * aux_criterion(head_b(features), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

# --- scaler.update -----------------------------------------------------------------------------

case("scaler_update_every_micro_step", """\
    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            scaler.step(optimizer)
            optimizer.zero_grad()
        scaler.update()  # <ACC008
""")


@pytest.mark.parametrize("name", sorted(CASES))
def test_framework_case(name):
    source = CASES[name]
    compile(source, name, "exec")
    assert found(source) == expected(source)


def test_cases_cover_acc006_to_acc010():
    codes = set()
    for source in CASES.values():
        codes |= {code for code, _ in expected(source)}
    assert {"ACC006", "ACC007", "ACC008", "ACC009", "ACC010"} <= codes
