"""False alarms and wrong fixes found by sweeping public training code, each in its general shape
(written here from scratch, not copied)."""

from __future__ import annotations

import textwrap

from accumlint import engine
from tests.snippets import findings_of


def check(source: str):
    return findings_of(source, dedent=True)


def codes(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in check(source)}


# A trainer that divides by hand unless an engine divides, and rebinds `loss` to the engine's
# backward in the branch that excludes the plain backward.
GUARDED = """
class Trainer:
    def training_step(self, batch):
        loss = self.model(batch)
        if self.accum > 1 and not self.engine:
            loss = loss / self.accum
        if self.engine:
            loss = self.engine.backward(loss)
        else:
            loss.backward()
        return loss.detach()

    def train(self, loader):
        for step, batch in enumerate(loader):
            self.training_step(batch)
            if (step + 1) % self.accum == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_a_definition_on_another_branch_never_reaches_the_backward():
    # Neither "never divided" (the division reaches the plain backward) nor "divided twice"
    # (the division is kept from the engine by the same test).
    assert codes(GUARDED) == set()


def test_without_the_hand_division_the_plain_backward_is_still_reported():
    source = GUARDED.replace("        if self.accum > 1 and not self.engine:\n            loss = loss / self.accum\n", "")
    assert ("ACC001", 8) in codes(source)


OPTIMIZER_BACKWARD = """
def train(args, model, optimizer, loader):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y){divide}
        optimizer.backward(loss)
        if (step + 1) % args.accum == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_loss_scaling_optimizers_backward_differentiates_its_argument():
    assert codes(OPTIMIZER_BACKWARD.format(divide=" / args.accum")) == set()
    source = textwrap.dedent(OPTIMIZER_BACKWARD.format(divide=""))
    assert codes(source) == {("ACC001", 5)}
    fixed = engine.fix_source(source, "t.py").fixed_source
    assert "optimizer.backward(loss / args.accum)" in fixed  # never `(optimizer / k).backward(...)`


def test_an_object_built_as_a_scheduler_has_no_tensor_backward():
    source = """
    sched = torch.optim.lr_scheduler.LambdaLR(opt, f)
    for i, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        sched.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
    """
    assert {code for code, _ in codes(source)} == {"ACC001"}
    assert all(f.location.row == 5 for f in check(source))


def test_a_store_under_a_constant_key_overwrites_and_cannot_grow():
    source = """
    def train(gen, disc, d_opt, loader):
        losses, curve = {}, {}
        for step, real in enumerate(loader):
            d_loss = disc(gen(real)).mean()
            losses["d"] = d_loss
            curve[step] = d_loss
            d_opt.zero_grad()
            d_loss.backward()
            d_opt.step()
        print(losses, curve)
    """
    assert codes(source) == {("ACC002", 7)}  # the slot per step grows; the constant key does not


def test_a_loop_over_precomputed_losses_reading_grads_between_passes_is_pcgrad():
    source = """
    def per_task_grads(optimizer, params, losses):
        grads = []
        for loss in losses:
            optimizer.zero_grad(set_to_none=True)
            loss.backward(retain_graph=True)
            grads.append([p.grad.clone() for p in params if p.grad is not None])
        return grads
    """
    assert codes(source) == set()
    summed_only = source.replace("            grads.append([p.grad.clone() for p in params if p.grad is not None])\n", "").replace(
        "            optimizer.zero_grad(set_to_none=True)\n", "")
    assert {code for code, _ in codes(summed_only)} == {"ACC006"}


def test_a_function_stepping_in_its_own_loop_is_judged_there_not_at_each_call():
    source = """
    def run_epoch(model, loader, optimizer, mode):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            if mode == "train":
                loss.backward()
                optimizer.step()


    def main(model, optimizer, train_dl, valid_dl, epochs):
        for epoch in range(epochs):
            run_epoch(model, train_dl, optimizer, mode="train")
            run_epoch(model, valid_dl, None, mode="valid")
    """
    assert codes(source) == {("ACC014", 7)}


def test_a_float_annealed_with_builtin_max_is_no_carried_state():
    source = """
    def train(model, optimizer, loader, epochs):
        step, temp = 0, 1.0
        for epoch in range(epochs):
            for x in loader:
                loss = model(x, temp=temp)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if step % 100 == 0:
                    temp = max(temp * 0.99, 0.5)
                step += 1
    """
    assert codes(source) == set()
    carried = source.replace("temp = max(temp * 0.99, 0.5)", "temp = max(model.head(x), 0.5)")
    assert {code for code, _ in codes(carried)} == {"ACC003"}


def test_a_value_made_from_the_batch_alone_stored_per_step_keeps_no_graph():
    source = """
    def train(model, optimizer, loader, length_fn, get_lr):
        lengths, curve = {}, {}
        for i, (x, y) in enumerate(loader):
            for group in optimizer.param_groups:
                group["lr"] = get_lr(i)
            lengths[i] = length_fn(x)
            loss = model(x).mean()
            curve[i] = loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        print(lengths, curve)
    """
    assert codes(source) == {("ACC002", 9)}  # the loss per step, not the batch's lengths or the lr


TUNED_PROBABILITY = """
class Tuner:
    def __init__(self):
        self.p = 0.0

    def tune(self, pred):
        self.p = min(1.0, max(0.0, self.p + 0.01 * (pred.sign().mean().item() - 0.6)))
        return self.p


def train(gen, disc, optimizer, loader, augment):
    tuner = Tuner()
    p = 0.0
    for real in loader:
        pred = disc(augment(real, p))
        loss = (1 - pred).relu().mean() + disc(augment(gen(real), p)).relu().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        p = tuner.tune(pred)
"""


def test_a_method_of_a_local_object_returning_a_float_carries_no_graph():
    assert codes(TUNED_PROBABILITY) == set()
    # The same object handing the prediction itself back carries it into the next iteration.
    passing = TUNED_PROBABILITY.replace("        return self.p\n", "        return pred * self.p\n")
    assert codes(passing) == {("ACC003", 20)}


def _write(root, files):
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


def test_a_no_grad_method_of_an_imported_class_returns_no_graph(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "",
        "augment.py": """
            import torch


            class Adaptive:
                def __init__(self, target):
                    self.target = target
                    self.buf = torch.zeros(2)
                    self.p = 0.0

                @torch.no_grad()
                def tune(self, pred):
                    self.buf += torch.tensor((torch.sign(pred).sum().item(), pred.shape[0]))
                    signs, n = self.buf.tolist()
                    self.p = min(1.0, max(0.0, self.p + (signs / n - self.target)))
                    return self.p
            """,
        "train.py": """
            from augment import Adaptive


            def train(args, gen, disc, optimizer, loader, augment):
                p = 0.0
                if args.ada:
                    tuner = Adaptive(args.target)
                for real in loader:
                    pred = disc(augment(real, p))
                    loss = pred.relu().mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    if args.ada:
                        p = tuner.tune(pred)
            """,
    })
    path = tmp_path / "train.py"
    assert findings_of(path.read_bytes(), path=str(path)) == []
    # A value computed from the prediction by tensor ops: graph-free only because of no_grad.
    module = (tmp_path / "augment.py").read_text().replace("return self.p", "return torch.sign(pred).mean() * 0.01 + self.p")
    (tmp_path / "augment.py").write_text(module)
    result = engine.check_source(path.read_bytes(), str(path))
    assert result.findings == []
    (tmp_path / "augment.py").write_text(module.replace("    @torch.no_grad()\n", ""))
    result = engine.check_source(path.read_bytes(), str(path))
    assert [f.code for f in result.findings] == ["ACC003"]


def test_a_float_from_the_command_line_annealed_at_module_level_is_no_carried_state():
    source = """
    import argparse
    import math
    import helpers

    parser = argparse.ArgumentParser()
    parser.add_argument("--temp", type=float, default=1.0)
    parser = helpers.wrap_parser(parser)
    args = parser.parse_args()
    temp = args.temp
    for step, x in enumerate(loader):
        loss = model(x, temp=temp)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            temp = max(temp * math.exp(-1e-6 * step), 0.5)
    """
    assert codes(source) == set()
    carried = source.replace("temp = max(temp * math.exp(-1e-6 * step), 0.5)", "temp = model.head(x)")
    assert {code for code, _ in codes(carried)} == {"ACC003"}


def test_the_data_batch_of_an_enclosing_loop_reworked_in_a_truncated_bptt_loop_is_data():
    source = """
    class Trainer:
        def train_batches(self, batches):
            for batch in batches:
                src, tgt_all = batch["src"], batch["tgt"]
                for j in range(0, tgt_all.size(1), self.trunc):
                    out = self.model(src, tgt_all[:, j:j + self.trunc])
                    batch = self.criterion.mask_prompt(batch)
                    loss = self.criterion(batch, out)
                    loss.backward()
                self.optim.step()
                self.optim.zero_grad()
    """
    assert codes(source) == set()
    moved = source.replace('src, tgt_all = batch["src"], batch["tgt"]', 'batch = batch.to(self.device)\n                src, tgt_all = batch["src"], batch["tgt"]')
    assert codes(moved) == set()
    # A state that enters the inner loop from an assignment is still a carried state.
    state = source.replace('src, tgt_all = batch["src"], batch["tgt"]', 'src, tgt_all = batch["src"], batch["tgt"]\n                hidden = self.model.init_hidden()').replace(
        "out = self.model(src, tgt_all[:, j:j + self.trunc])", "out, hidden = self.model(src, tgt_all[:, j:j + self.trunc], hidden)")
    assert {code for code, _ in codes(state)} == {"ACC003"}


def test_a_ddp_wrapper_whose_all_reduce_is_switched_off_by_hand_manages_its_sync():
    source = """
    from apex.parallel import DistributedDataParallel as DDP


    def train(args, model, optimizer, loader):
        model = DDP(model)
        for step, (x, y) in enumerate(loader):
            loss = model(x, y) / args.accum
            last = (step + 1) % args.accum == 0 or step + 1 == len(loader)
            model.disable_allreduce()
            if last:
                model.enable_allreduce()
            loss.backward()
            if last:
                optimizer.step()
                optimizer.zero_grad()
    """
    assert codes(source) == set()
    unmanaged = source.replace("            model.disable_allreduce()\n            if last:\n                model.enable_allreduce()\n", "")
    assert {code for code, _ in codes(unmanaged)} == {"ACC009"}


PER_EPOCH = """
def train(model, optimizer, loader, k, epochs):
    for epoch in range(epochs):
        for i, batch in enumerate(loader):
            loss = model(batch).mean() / k
            loss.backward()
            if (i + 1) % k == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def test_acc005_says_where_the_unstepped_gradients_go():
    # No zeroing between epochs: the leftover joins the next epoch's first window.
    (leak,) = check(PER_EPOCH)
    assert leak.code == "ACC005"
    assert "in their epoch" in leak.message and "added to the next epoch's first window" in leak.message
    # Zeroed when an epoch starts: the leftover is thrown away.
    zeroed = PER_EPOCH.replace("    for epoch in range(epochs):\n", "    for epoch in range(epochs):\n        optimizer.zero_grad()\n")
    (dropped,) = check(zeroed)
    assert "zeroed before the next epoch's first step" in dropped.message
    assert "added to the next epoch" not in dropped.message
    # One epoch per call: what the caller does between calls is not in sight, and not claimed.
    (one,) = check(PER_EPOCH.replace("    for epoch in range(epochs):\n", "    if True:\n"))
    assert "next epoch" not in one.message


def test_acc009_never_advises_no_sync_on_a_ddp_class_that_has_none():
    source = """
    from apex.parallel import DistributedDataParallel as DDP


    def train(args, model, optimizer, loader):
        model = DDP(model)
        for step, (x, y) in enumerate(loader):
            loss = model(x, y) / args.accum
            loss.backward()
            if (step + 1) % args.accum == 0 or step + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
    """
    (apex,) = check(source)
    assert apex.code == "ACC009" and "no_sync()`:" in apex.message and "disable_allreduce" in apex.message
    torch_ddp = source.replace("from apex.parallel import", "from torch.nn.parallel import")
    (plain,) = check(torch_ddp)
    assert "wrap the forward and backward of non-final micro-steps in `model.no_sync()`" in plain.message
    assert "apex" not in plain.message


MEAN_BY_HAND = """
def train_epoch(model, loader, optimizer, args):
    for step, batch in enumerate(loader):
        out = model(**batch)[0]
        loss = {loss}
        loss.backward()
        if (step + 1) % args.backward_freq == 0 or step + 1 == len(loader):
            optimizer.step()
            model.zero_grad()
"""


def test_a_mean_written_by_hand_is_no_division_by_the_window():
    for mean in ("out.sum() / out.shape[0]", "out.sum() / out.size(0)", "out.sum() / len(out)", "out.sum() / out.numel()"):
        source = MEAN_BY_HAND.format(loss=mean)
        assert codes(source) == {("ACC001", 6)}, mean
        fixed = engine.fix_source(textwrap.dedent(source), "t.py").fixed_source
        assert "(loss / args.backward_freq).backward()" in fixed
    # Divided by something else than its own size: a count the analysis cannot read, scaled.
    assert codes(MEAN_BY_HAND.format(loss="out.sum() / batch['input_ids'].shape[0]")) == set()
    assert codes(MEAN_BY_HAND.format(loss="out.sum() / num_tokens")) == set()
    assert codes(MEAN_BY_HAND.format(loss="out.sum() / out.shape[0] / args.backward_freq")) == set()


TUNER_ON_SELF = """
class Tuner:
    def __init__(self):
        self.p = 0.0

    def tune(self, pred):
        self.p = min(1.0, max(0.0, self.p + 0.01 * (pred.sign().mean().item() - 0.6)))
        return self.p


class Trainer:
    def __init__(self, disc, optimizer, augment):
        self.disc, self.optimizer, self.augment = disc, optimizer, augment
        self.tuner = None
        self.tuner = Tuner()

    def train(self, loader):
        p = 0.0
        for real in loader:
            pred = self.disc(self.augment(real, p))
            loss = (1 - pred).relu().mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            p = self.tuner.tune(pred)
"""


def test_a_method_of_an_object_held_on_self_is_judged_by_what_it_returns():
    assert codes(TUNER_ON_SELF) == set()
    passing = TUNER_ON_SELF.replace("        return self.p\n", "        return pred * self.p\n")
    assert codes(passing) == {("ACC003", 25)}
    # Bound to something the analysis cannot see as well: unknown, the call keeps its argument's graph.
    rebound = TUNER_ON_SELF.replace("        self.tuner = None\n", "        self.tuner = augment.tuner\n")
    assert codes(rebound) == {("ACC003", 25)}


DDP_ON_SELF = """
import contextlib
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer, k):
        self.model = DDP(model)
        self.optimizer = optimizer
        self.k = k

    def train(self, loader):
        for i, (x, y) in enumerate(loader):
            last = (i + 1) % self.k == 0 or i + 1 == len(loader)
            {context}loss = self.model(x, y) / self.k
            {indent}loss.backward()
            if last:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_acc009_on_a_wrapped_model_held_on_self():
    found = check(DDP_ON_SELF.format(context="", indent=""))
    assert [(f.code, f.location.row) for f in found] == [("ACC009", 16)]
    assert "`self.model.no_sync()`" in found[0].message
    managed = DDP_ON_SELF.format(
        context="ctx = contextlib.nullcontext() if last else self.model.no_sync()\n            with ctx:\n                ",
        indent="    ",
    )
    assert codes(managed) == set()


WHOLE_SEQUENCE = """
def train(model, opt, loader, crit):
    {init_once}for x, y in loader:
        {init_per_batch}for t in range(x.size(1)):
            out, h = model(x[:, t], h)
            loss = crit(out, y[:, t])
            loss.backward(retain_graph=True)
        opt.step()
        opt.zero_grad()
"""


def test_per_step_backward_through_one_whole_sequence_keeps_its_state_on_purpose():
    per_batch = WHOLE_SEQUENCE.format(init_once="", init_per_batch="h = model.init_hidden(x.size(0))\n        ")
    assert "ACC003" not in {code for code, _ in codes(per_batch)}
    # Made once before the data loop: the chain of graphs grows with every batch.
    once = WHOLE_SEQUENCE.format(init_once="h = model.init_hidden(8)\n    ", init_per_batch="")
    assert ("ACC003", _row(once, "out, h = model(")) in codes(once)
    # Without retain_graph the next step's backward cannot pass through the state: detach it.
    plain = per_batch.replace("loss.backward(retain_graph=True)", "loss.backward()")
    assert ("ACC003", _row(plain, "out, h = model(")) in codes(plain)
    # Truncated BPTT stepping after every chunk: the next pass would run through changed weights.
    chunked = per_batch.replace("            loss.backward(retain_graph=True)\n", "            loss.backward(retain_graph=True)\n            opt.step()\n")
    assert ("ACC003", _row(chunked, "out, h = model(")) in codes(chunked)


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def test_a_step_held_by_a_logging_gate_is_one_finding_not_a_window_too():
    source = """
    def train(model, opt, loader, crit, args):
        for step, (x, y) in enumerate(loader):
            loss = crit(model(x), y) / args.gradient_accumulation_steps
            loss.backward()
            if step % args.logging_steps == 0:
                print(loss.item())
                opt.step()
                opt.zero_grad()
    """
    assert {code for code, _ in codes(source)} == {"ACC012"}  # the misplaced step block, not a dropped window
    window = source.replace("args.logging_steps", "args.gradient_accumulation_steps").replace("                print(loss.item())\n", "")
    assert {code for code, _ in codes(window)} == {"ACC005"}


OPTIM_WRAPPER = """
import torch


class Optim:
    def __init__(self, params):
        self.opt = torch.optim.SGD(params, lr=0.1)

    def step(self):
        self.opt.step()
        {clear}


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optim = Optim(model.parameters())

    def fit(self, loader, crit):
        for x, y in loader:
            loss = crit(self.model(x), y)
            loss.backward()
            self.optim.step()


def train(model, loader, crit):
    optim = Optim(model.parameters())
    for x, y in loader:
        crit(model(x), y).backward()
        optim.step()
"""


def test_an_optimizer_wrapper_whose_step_zeroes_clears_the_gradients():
    assert codes(OPTIM_WRAPPER.format(clear="self.opt.zero_grad()")) == set()
    assert codes(OPTIM_WRAPPER.format(clear="self.opt.zero_grad(set_to_none=True)")) == set()
    # A wrapper that never zeroes is the bug, reported without a fix: `zero_grad()` is none of its methods.
    found = check(OPTIM_WRAPPER.format(clear="pass"))
    assert {(f.code, f.location.row) for f in found} == {("ACC014", 23), ("ACC014", 30)}
    assert all(f.fix is None for f in found)
    assert all("zero the wrapped optimizer's gradients in that `step()`" in f.message for f in found)


TWO_ACCELERATORS = """
from accelerate import Accelerator


def with_accumulate(args, model, opt, loader):
    accelerator = Accelerator({first})
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(batch)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()


def by_hand(args, model, opt, loader):
    accelerator = Accelerator({second})
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for step, batch in enumerate(loader):
        loss = model(batch) / args.gradient_accumulation_steps
        accelerator.backward(loss)
        if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""


def test_one_accelerator_name_built_two_ways_in_two_functions_is_not_mixed_up():
    gas = "gradient_accumulation_steps=args.gradient_accumulation_steps"
    # Each function is right on its own: neither "never received the steps" nor "divided twice".
    assert codes(TWO_ACCELERATORS.format(first=gas, second="")) == set()
    swapped = TWO_ACCELERATORS.format(first=gas, second="")
    head, first, second = swapped.split("\n\ndef ")
    assert codes("\n\ndef ".join([head, second, first])) == set()
    # Built the same way in both: each reading is certain again.
    assert {code for code, _ in codes(TWO_ACCELERATORS.format(first="", second=""))} == {"ACC012"}
    assert {code for code, _ in codes(TWO_ACCELERATORS.format(first=gas, second=gas))} == {"ACC010"}


def test_acc009_needs_the_wrapping_in_sight_of_the_loop():
    source = """
    from torch.nn.parallel import DistributedDataParallel as DDP


    def setup(model, distributed):
        if distributed:
            model = DDP(model)
        return model


    def train(model, opt, loader, k):
        {wrap}for i, (x, y) in enumerate(loader):
            loss = model(x, y) / k
            loss.backward()
            if (i + 1) % k == 0 or i + 1 == len(loader):
                opt.step()
                opt.zero_grad()
    """
    # `model` of `train` is a parameter: the bare model or setup's result, the file does not say.
    assert codes(source.format(wrap="")) == set()
    assert {code for code, _ in codes(source.format(wrap="model = DDP(model)\n        "))} == {"ACC009"}
