"""ACC002 loss-kept-with-graph, by the value kept and the lifetime of what keeps it.

Each shape positive and negative, in script, trainer-class and multi-module form: graph-carrying
decided on the whole value (wherever the detach sits), tensor methods that keep the graph, stores by
index, dicts of meters, `self` lists across method calls, evaluation passes without `no_grad`, totals
reset every window. Every fix is checked: the fixed text compiles, loses its finding, fixing again
changes nothing, and only the statement it lands on changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import fix_source
from rule_cases import RuleCases, src

SELECT = {"ACC002"}

CASES = RuleCases("ACC002")
_src = src
found, marked, assert_clean = CASES.found, CASES.marked, CASES.assert_clean
assert_reported = CASES.assert_reported


def assert_fix(source: str, changed: dict[str, str], filename: str = "case.py", unsafe: bool = False) -> str:
    """The fix compiles, removes every finding, is idempotent, and changes exactly the lines in
    `changed` (old stripped line -> new stripped line)."""
    once = fix_source(source, filename, select=SELECT, unsafe_fixes=unsafe)
    assert once.error is None, once.error
    fixed = once.fixed_source
    assert fixed is not None, "no fix applied"
    compile(fixed, filename, "exec")
    assert once.findings == [] and found(fixed, filename) == []
    twice = fix_source(fixed, filename, select=SELECT, unsafe_fixes=unsafe)
    assert twice.error is None and twice.fixed_source is None
    old, new = source.splitlines(), fixed.splitlines()
    assert len(old) == len(new)
    for before, after in zip(old, new):
        if before != after:
            assert changed.get(before.strip()) == after.strip(), (before, after)
        else:
            assert before.strip() not in changed, before
    return fixed


# --- the value decides: tensor methods, products and quotients, detach anywhere ---------------------

LOOP = """
    def train(model, loader, criterion, optimizer):
        {holder}
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            {store}  # <ACC002
"""


@pytest.mark.parametrize("holder, store, fixed", [
    ("total = 0.0", "total += loss.float()", "total += loss.float().detach()  # <ACC002"),
    ("total = 0.0", "total += loss.half()", "total += loss.half().detach()  # <ACC002"),
    ("total = 0.0", "total += loss.to('cpu')", "total += loss.to('cpu').detach()  # <ACC002"),
    ("losses = []", "losses.append(loss / 2)", "losses.append((loss / 2).detach())  # <ACC002"),
    ("total = 0.0", "total += loss * x.size(0)", "total += (loss * x.size(0)).detach()  # <ACC002"),
    ("total = 0.0", "total = total + 2 * loss", "total = total + (2 * loss).detach()  # <ACC002"),
])
def test_graph_kept_through_tensor_methods_and_arithmetic(holder, store, fixed):
    source = _src(LOOP.format(holder=holder, store=store))
    findings = assert_reported(source)
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"
    assert_fix(source, {f"{store}  # <ACC002": fixed})


@pytest.mark.parametrize("holder, store", [
    ("total = 0.0", "total += (loss.detach() - 1).abs().mean()"),
    ("errors = []", "errors.append((model(x).detach() - y).abs().mean())"),
    ("total = 0.0", "total += loss.item() / x.size(0)"),
    ("total = 0", "total += float(loss) / 4"),
    ("preds = []", "preds.append(model(x).max(1)[1])"),
    ("preds = []", "preds.append(model(x).topk(1)[1])"),
    ("preds = []", "preds.append(model(x).data.argmax(1))"),
])
def test_value_detached_inside_the_expression_is_graph_free(holder, store):
    assert_clean(_src(LOOP.format(holder=holder, store=store)).replace("  # <ACC002", ""))


# --- stores by index, dicts of meters ---------------------------------------------------------------

def test_store_by_index_into_a_long_lived_dict():
    source = _src("""
        def train(model, loader, criterion, optimizer):
            curve = {}
            for step, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                curve[step] = loss  # <ACC002
            print(curve)
    """)
    assert_reported(source)
    assert_fix(source, {"curve[step] = loss  # <ACC002": "curve[step] = loss.detach()  # <ACC002"})


def test_store_by_index_rebuilt_every_iteration_is_clean():
    assert_clean(_src("""
        def train(model, loader, criterion, optimizer):
            for step, (x, y) in enumerate(loader):
                curve = {}
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                curve[step] = loss
    """))


def test_preallocated_output_backwarded_is_clean():
    assert_clean(_src("""
        import torch
        for x, y in loader:
            outputs = torch.zeros(x.size(0), 10)
            for t in range(x.size(0)):
                outputs[t] = decoder(x[t])
            loss = criterion(outputs, y)
            loss.backward()
            optimizer.step()
    """))


METERS = _src("""
    sums = {"ce": 0.0, "kl": 0.0}
    for x, y in loader:
        out = model(x)
        terms = {"ce": ce(out, y), "kl": kl(out)}
        loss = terms["ce"] + terms["kl"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        for name, value in terms.items():
            sums[name] += value  # <ACC002
""")


def test_dict_of_meters_keeps_every_term():
    findings = assert_reported(METERS)
    assert "`sums`" in findings[0].message
    assert findings[0].fix is None  # `value` of unknown type: no `.detach()` on what may be a float


def test_dict_of_meters_fed_with_items_is_clean():
    assert_clean(METERS.replace("sums[name] += value  # <ACC002", "sums[name] += value.item()"))


# --- lifetimes: a total reset every window cannot grow -----------------------------------------------

def test_running_loss_reset_at_every_optimizer_step_is_clean():
    assert_clean(_src("""
        running_loss = 0
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y) / k
            running_loss += loss
            loss.backward()
            if (i + 1) % k == 0:
                optimizer.step()
                optimizer.zero_grad()
                print(running_loss.item())
                running_loss = 0
    """))


def test_total_reset_per_epoch_outlives_the_batch_loop():
    source = _src("""
        for epoch in range(epochs):
            epoch_loss = 0.0
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                epoch_loss += loss  # <ACC002
            print(epoch, epoch_loss)
    """)
    assert_reported(source)
    assert_fix(source, {"epoch_loss += loss  # <ACC002": "epoch_loss += loss.detach()  # <ACC002"})


def test_list_cleared_every_iteration_is_clean():
    assert_clean(_src("""
        losses = []
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)
            print(sum(l.item() for l in losses))
            losses.clear()
    """))


# --- evaluation passes without no_grad ---------------------------------------------------------------

EVAL = _src("""
    import torch


    def evaluate(model, loader, criterion):
        model.eval()
        losses = []
        for x, y in loader:
            out = model(x)
            losses.append(criterion(out, y))  # <ACC002
        return torch.stack(losses).mean().item()


    val = evaluate(model, val_loader, criterion)
""")


def test_evaluation_pass_without_no_grad_is_reported():
    findings = assert_reported(EVAL)
    assert "never calls backward" in findings[0].message
    assert findings[0].fix is not None and findings[0].fix.applicability == "unsafe"
    assert fix_source(EVAL, "case.py", select=SELECT).fixed_source is None  # unsafe: needs opt-in
    fixed = fix_source(EVAL, "case.py", select=SELECT, unsafe_fixes=True).fixed_source
    assert fixed is not None
    compile(fixed, "case.py", "exec")
    assert "    with torch.no_grad():\n        for x, y in loader:\n            out = model(x)\n" in fixed
    assert found(fixed) == []
    assert fix_source(fixed, "case.py", select=SELECT, unsafe_fixes=True).fixed_source is None
    # Only the loop moved: every other line is the same.
    old = [line for line in EVAL.splitlines() if "for x, y" not in line and "out = model" not in line and "losses.append" not in line]
    new = [line for line in fixed.splitlines() if "no_grad" not in line and "for x, y" not in line
           and "out = model" not in line and "losses.append" not in line]
    assert old == new


def test_evaluation_pass_without_torch_import_has_no_fix():
    source = EVAL.replace("import torch\n", "from torch import stack\n").replace("torch.stack", "stack")
    findings = assert_reported(source)
    assert findings[0].fix is None


@pytest.mark.parametrize("guard", [
    ("    with torch.no_grad():\n", 1),
    ("    torch.set_grad_enabled(False)\n", 0),
])
def test_evaluation_pass_with_autograd_off_is_clean(guard):
    text, indent = guard
    lines = EVAL.replace("  # <ACC002", "").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "for x, y" in line)
    body = lines[start:start + 3]
    lines[start:start + 3] = [text] + ["    " * indent + line for line in body]
    assert_clean("".join(lines))


def test_evaluation_called_under_no_grad_is_clean():
    assert_clean(EVAL.replace("  # <ACC002", "").replace(
        "val = evaluate(model, val_loader, criterion)",
        "with torch.no_grad():\n    val = evaluate(model, val_loader, criterion)",
    ))


def test_evaluation_decorated_no_grad_or_keeping_indices_is_clean():
    assert_clean(EVAL.replace("  # <ACC002", "").replace("def evaluate", "@torch.no_grad()\ndef evaluate"))
    assert_clean(EVAL.replace("losses.append(criterion(out, y))  # <ACC002", "losses.append(out.argmax(1))"))


def test_forward_under_no_grad_then_kept_is_clean():
    assert_clean(_src("""
        import torch
        losses = []
        for batch in eval_loader:
            with torch.no_grad():
                outputs = model(**batch)
            losses.append(outputs.loss)
    """))


def test_loop_keeping_chunks_for_a_returned_loss_is_clean():
    assert_clean(_src("""
        import torch
        def per_token_logps(model, chunks):
            kept = []
            for chunk in chunks:
                kept.append(model(chunk).logits)
            logps = torch.cat(kept)
            return logps
    """))


def test_lightning_validation_step_keeps_nothing():
    assert_clean(_src("""
        import lightning as L
        class Lit(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                out = self.model(batch)
                self.val_outputs.append(out)
                for x in batch:
                    self.val_outputs.append(self.model(x))
    """))


# --- trainer classes: `self` lists across method calls ----------------------------------------------

TRAINER = _src("""
    import torch


    class Trainer:
        def __init__(self, model, optimizer, criterion):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion
            self.history = []

        def train_step(self, x, y):
            loss = self.criterion(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.history.append(loss)  # <ACC002

        def on_epoch_end(self):
            print(torch.stack(self.history).mean())
            self.history.clear()
""")


def test_self_history_filled_across_calls_is_reported():
    findings = assert_reported(TRAINER)
    assert "across calls of `train_step`" in findings[0].message
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"
    assert_fix(TRAINER, {"self.history.append(loss)  # <ACC002": "self.history.append(loss.detach())  # <ACC002"})


def test_self_list_without_loop_or_backward_in_a_training_step():
    source = _src("""
        class Trainer:
            def training_step(self, batch, y):
                loss = self.criterion(self.model(batch), y)
                self.outputs.append(loss)  # <ACC002
                return loss
    """)
    assert_reported(source)


@pytest.mark.parametrize("variant", [
    # backward-ed later: a deferred loss
    ("    def on_epoch_end(self):", "    def flush(self):\n        for l in self.history:\n            l.backward()\n\n    def on_epoch_end(self):"),
    # handed out by a getter
    ("    def on_epoch_end(self):", "    def get(self, i):\n        return self.history[i]\n\n    def on_epoch_end(self):"),
    # reset at every optimizer step
    ("        self.history.append(loss)  # <ACC002", "        self.history.append(loss)\n        self.history = []"),
    # detached
    ("        self.history.append(loss)  # <ACC002", "        self.history.append(loss.detach())"),
])
def test_self_list_not_a_leak(variant):
    old, new = variant
    assert old in TRAINER
    assert_clean(TRAINER.replace(old, new).replace("  # <ACC002", ""))


def test_trainer_with_loop_and_meter_dict_on_self():
    source = _src("""
        class Trainer:
            def fit(self, loader):
                for x, y in loader:
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    self.meters["loss"] += loss  # <ACC002
    """)
    assert_reported(source)
    assert_fix(source, {'self.meters["loss"] += loss  # <ACC002': 'self.meters["loss"] += loss.detach()  # <ACC002'})


# --- multi-module ------------------------------------------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_src(text))


def test_helper_in_another_module_returns_a_live_loss(tmp_path):
    _write(tmp_path, {
        "losses.py": """
            def compute(model, x, y, criterion):
                return criterion(model(x), y)
        """,
        "train.py": """
            from losses import compute

            total = 0.0
            for x, y in loader:
                loss = compute(model, x, y, criterion)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                total += loss * 2
        """,
    })
    path = tmp_path / "train.py"
    findings = found(path.read_text(), str(path))
    assert [(f.location.row, f.code) for f in findings] == [(9, "ACC002")]
    fixed = fix_source(path.read_text(), str(path), select=SELECT).fixed_source
    assert fixed is not None and "total += (loss * 2).detach()" in fixed


def test_helper_in_another_module_returns_a_float(tmp_path):
    _write(tmp_path, {
        "steps.py": """
            def train_one(model, x, y, criterion, optimizer):
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                return loss.item() / x.size(0)
        """,
        "train.py": """
            from steps import train_one

            total = 0.0
            for x, y in loader:
                loss = train_one(model, x, y, criterion, optimizer)
                total += loss
        """,
    })
    path = tmp_path / "train.py"
    assert found(path.read_text(), str(path)) == []


def test_evaluation_helper_in_another_module_called_under_no_grad(tmp_path):
    _write(tmp_path, {
        "evaluation.py": """
            def run_eval(model, loader):
                outs = []
                for x in loader:
                    outs.append(model(x))
                return outs
        """,
        "train.py": """
            import torch
            from evaluation import run_eval

            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
            with torch.no_grad():
                outs = run_eval(model, val_loader)
        """,
    })
    for name in ("train.py", "evaluation.py"):
        path = tmp_path / name
        assert found(path.read_text(), str(path)) == []


# --- real-code shapes that are not evaluation passes -------------------------------------------------

def test_model_loop_over_tiles_is_not_an_evaluation_pass():
    # A library model's own loop (tiled decoding): the caller picks the grad mode.
    assert_clean(_src("""
        import torch
        class Decoder:
            def tiled_decode(self, z):
                rows = []
                for i in range(0, z.shape[2], self.tile):
                    rows.append(self.decoder(z[:, :, i:i + self.tile]))
                self.decoded = torch.cat(rows, dim=2)
    """))


def test_prompt_embeddings_collected_and_returned_is_clean():
    assert_clean(_src("""
        import torch
        def encode(text_encoder, loader):
            embeds = []
            for batch in loader:
                embeds.append(text_encoder(batch))
            result = torch.cat(embeds)
            return result
    """))


def test_timing_value_from_a_policy_call_is_not_an_output():
    assert_clean(_src("""
        def rollout(policy, env, loader):
            spent = 0
            for obs in loader:
                action, seconds = policy(obs)
                spent += seconds
                env.step(action)
            print(spent)
    """))


def test_meter_dict_reset_by_comprehension_every_window_is_clean():
    assert_clean(_src("""
        metrics = {"a": 0, "b": 0}
        for i, (x, y) in enumerate(loader):
            out = model(x)
            loss = criterion(out, y) / k
            loss.backward()
            metrics["a"] += 0.5 * out.mean()
            if (i + 1) % k == 0:
                optimizer.step()
                optimizer.zero_grad()
                print({key: float(v) for key, v in metrics.items()})
                metrics = {key: 0 for key in metrics}
    """))


def test_loader_batches_counted_are_not_graphs():
    assert_clean(_src("""
        for epoch in range(epochs):
            n_total = 0
            for batch in train_iter:
                answer = model(batch)
                n_total += batch.batch_size
                loss = criterion(answer, batch.label)
                loss.backward()
                optimizer.step()
    """))


def test_epoch_state_of_metrics_and_learning_rate_is_clean():
    # accelerate's checkpointing test: `prepare` ties the optimizer and scheduler to the loader, but
    # what the state dict stores is a metric and learning rates, not this loop's loss.
    assert_clean(_src("""
        model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)
        state = {}
        for epoch in range(epochs):
            for step, batch in enumerate(train_dataloader):
                outputs = model(**batch)
                loss = outputs.loss / k
                accelerator.backward(loss)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
            accuracy = evaluation_loop(accelerator, model, eval_dataloader, metric)
            state["accuracy"] = accuracy
            state["lr"] = lr_scheduler.get_lr()[0]
            state["optimizer_lr"] = optimizer.param_groups[0]["lr"]
    """))


# --- gradients from torch.autograd.grad: graph-free unless create_graph=True ---------------------------

GRADS = _src("""
    import torch


    def train(model, loader, optimizer, params):
        kept = []
        for x, y in loader:
            loss = model(x, y)
            grads = torch.autograd.grad(loss, params{create})
            penalty = sum(g.pow(2).sum() for g in grads)
            (loss + penalty).backward()
            optimizer.step()
            optimizer.zero_grad()
            kept.append(grads[0])  # <ACC002
        print(len(kept))
""")


def test_gradients_made_with_create_graph_and_kept_hold_a_graph():
    source = GRADS.format(create=", create_graph=True")
    findings = assert_reported(source)
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"
    assert_fix(source, {"kept.append(grads[0])  # <ACC002": "kept.append(grads[0].detach())  # <ACC002"})


@pytest.mark.parametrize("create", ["", ", retain_graph=True", ", create_graph=False"])
def test_gradients_without_create_graph_are_graph_free(create):
    assert_clean(GRADS.format(create=create).replace("  # <ACC002", ""))


def test_gradients_imported_as_grad_follow_the_same_rule():
    source = GRADS.replace("import torch\n", "import torch\nfrom torch.autograd import grad\n").replace("torch.autograd.grad(", "grad(")
    assert_reported(source.format(create=", create_graph=True"))
    assert_clean(source.format(create="").replace("  # <ACC002", ""))


SALIENCY = _src("""
    import torch


    def saliency(model, loader):
        maps = []
        for x, y in loader:
            x.requires_grad_(True)
            score = model(x).gather(1, y[:, None]).sum()
            g = torch.autograd.grad(score, x{create})[0]
            maps.append(g.abs())  # <ACC002
        torch.save(maps, "maps.pt")
""")


def test_evaluation_loop_taking_gradients_with_create_graph_is_fixed_by_detach_not_no_grad():
    source = SALIENCY.format(create=", create_graph=True")
    findings = assert_reported(source)
    assert "no_grad" not in findings[0].message  # no_grad would make autograd.grad raise
    assert_fix(source, {"maps.append(g.abs())  # <ACC002": "maps.append(g.abs().detach())  # <ACC002"})


def test_evaluation_loop_taking_plain_gradients_is_clean():
    assert_clean(SALIENCY.format(create="").replace("  # <ACC002", ""))


def test_trainer_keeping_a_gradient_penalty_on_self():
    source = _src("""
        import torch


        class Trainer:
            def train_step(self, real):
                real.requires_grad_(True)
                score = self.critic(real).sum()
                grads = torch.autograd.grad(score, real{create})[0]
                penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
                loss = score + 10 * penalty
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.penalties.append(penalty)  # <ACC002
    """)
    assert_reported(source.format(create=", create_graph=True"))
    assert_fix(
        source.format(create=", create_graph=True"),
        {"self.penalties.append(penalty)  # <ACC002": "self.penalties.append(penalty.detach())  # <ACC002"},
    )
    # Without create_graph the penalty is built from graph-free gradients only... but `score` is not
    # in it, so nothing of the forward pass is kept.
    assert_clean(source.format(create="").replace("  # <ACC002", ""))


# --- meters: an object whose method keeps its argument across calls ----------------------------------

METER = _src("""
    class AverageMeter:
        def __init__(self):
            self.reset()

        def reset(self):
            self.sum, self.count = 0, 0

        def update(self, val, n=1):
            self.sum += {kept} * n
            self.count += n


    def train(model, loader, criterion, optimizer):
        losses = AverageMeter()
        for x, y in loader:
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update({given}, x.size(0))  # <ACC002
        print(losses.sum / losses.count)
""")


def test_a_meter_summing_the_loss_keeps_every_graph():
    source = METER.format(kept="val", given="loss")
    findings = assert_reported(source)
    assert "`AverageMeter.update` keeps it in `self.sum`" in findings[0].message
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"
    assert_fix(source, {"losses.update(loss, x.size(0))  # <ACC002": "losses.update(loss.detach(), x.size(0))  # <ACC002"})


@pytest.mark.parametrize("kept, given", [
    ("val", "loss.item()"),  # the caller hands a number
    ("float(val)", "loss"),  # the meter keeps a number
    ("val.item()", "loss"),
])
def test_a_meter_given_or_keeping_numbers_is_clean(kept, given):
    assert_clean(METER.format(kept=kept, given=given).replace("  # <ACC002", ""))


def test_a_meter_reset_every_iteration_is_clean():
    source = METER.format(kept="val", given="loss").replace("  # <ACC002", "")
    source = source.replace("        losses.update(loss, x.size(0))\n", "        losses.update(loss, x.size(0))\n        losses.reset()\n")
    assert "losses.reset()" in source
    assert_clean(source)


def test_a_trainer_method_with_a_local_meter():
    source = _src("""
        class Meter:
            def __init__(self):
                self.values = []

            def add(self, value):
                self.values.append(value)


        class Trainer:
            def train_epoch(self, loader):
                meter = Meter()
                for x, y in loader:
                    loss = self.criterion(self.model(x), y)
                    loss.backward()
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    meter.add(loss)  # <ACC002
                return sum(v.item() for v in meter.values)
    """)
    assert_reported(source)


def test_meter_in_another_module_kept_by_an_evaluation_pass(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "",
        "metrics.py": """
            import torch


            class Accuracy:
                def __init__(self):
                    self.preds, self.targets = [], []

                def update(self, pred, target):
                    self.preds.append(pred)
                    self.targets.append(target)

                def value(self, tol):
                    pred, target = torch.cat(self.preds), torch.cat(self.targets)
                    return (torch.abs(pred - target) <= tol).float().mean().item()
        """,
        "evaluate.py": """
            import torch
            from metrics import Accuracy


            def valid_epoch(model, loader, criterion):
                model.eval()
                total = 0.0
                acc = Accuracy()
                for x, y in loader:
                    pred = model(x)
                    total += criterion(pred, y).item()
                    acc.update(torch.round(pred).float(), y.float())
                return total / len(loader), acc.value(tol=0), acc.value(tol=1)
        """,
    })
    path = tmp_path / "evaluate.py"
    findings = found(path.read_text(), str(path))
    assert [(f.location.row, f.code) for f in findings] == [(12, "ACC002")]
    assert "`Accuracy.update` keeps it in `self.preds`" in findings[0].message
    fixed = fix_source(path.read_text(), str(path), select=SELECT, unsafe_fixes=True).fixed_source
    assert fixed is not None and "    with torch.no_grad():\n        for x, y in loader:\n" in fixed
    compile(fixed, str(path), "exec")
    path.write_text(fixed)
    assert found(fixed, str(path)) == []
    # the same pass under no_grad, or a meter that keeps numbers, is clean
    path.write_text(_src(fixed))
    metrics = tmp_path / "metrics.py"
    metrics.write_text(metrics.read_text().replace("self.preds.append(pred)", "self.preds.append(pred.detach())").replace(
        "self.targets.append(target)", "self.targets.append(target.detach())"))
    original = fixed.replace("    with torch.no_grad():\n", "").replace("\n        ", "\n    ")
    assert found(original, str(path)) == []



# --- a meter returned to the caller, and a dict whose values are meters -------------------------------

RETURNED_METER = LOOP.replace("{holder}", "losses = {built}") + "        return losses\n"


@pytest.mark.parametrize("built, store", [
    ("AverageMeter()", "losses.update(loss, x.size(0))"),
    ("defaultdict(AverageMeter)", 'losses["loss"].update(loss, x.size(0))'),
])
def test_a_meter_handed_back_to_a_caller_out_of_sight_keeps_every_graph(built, store):
    """A meter is no tensor: returning it hands the caller every kept graph, not a loss to backward."""
    source = METER.format(kept="val", given="loss").split("def train(")[0].replace("class AverageMeter", "from collections import defaultdict\n\n\nclass AverageMeter")
    source += _src(RETURNED_METER.format(built=built, store=store))
    findings = assert_reported(source)
    assert "`AverageMeter.update` keeps it in `self.sum`" in findings[0].message
    assert_fix(source, {f"{store}  # <ACC002": f"{store.replace('(loss,', '(loss.detach(),')}  # <ACC002"})


@pytest.mark.parametrize("built, store", [
    ("AverageMeter()", "losses.update(loss.item(), x.size(0))"),  # numbers kept
    ("defaultdict(list)", 'losses["loss"].append(loss)'),  # not a meter class: the returned store may be backward-ed
    ("[]", "losses.append(loss)"),  # a returned list of losses: the caller may backward their sum
])
def test_a_returned_store_of_numbers_or_of_unknown_use_is_clean(built, store):
    source = METER.format(kept="val", given="loss").split("def train(")[0].replace("class AverageMeter", "from collections import defaultdict\n\n\nclass AverageMeter")
    source += _src(RETURNED_METER.format(built=built, store=store)).replace("  # <ACC002", "")
    assert_clean(source)


def test_a_dict_of_meters_from_another_module_in_a_trainer(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "",
        "meters.py": """
            class AverageMeter:
                def __init__(self):
                    self.total, self.count = 0, 0

                def update(self, value, n=1):
                    self.total += value * n
                    self.count += n
        """,
        "trainer.py": """
            from collections import defaultdict

            from meters import AverageMeter


            class Trainer:
                def train_epoch(self, loader):
                    stats = defaultdict(AverageMeter)
                    for x, y in loader:
                        out = self.model(x)
                        penalty = self.lam * out.pow(2).mean()
                        loss = self.criterion(out, y) + penalty
                        self.optimizer.zero_grad()
                        loss.backward()
                        self.optimizer.step()
                        stats["penalty"].update(penalty)
                        stats["loss"].update(loss.item())
                    return {k: m.total / m.count for k, m in stats.items()}
        """,
    })
    path = tmp_path / "trainer.py"
    findings = found(path.read_text(), str(path))
    assert [(f.location.row, f.code) for f in findings] == [(16, "ACC002")]
    assert "`stats` keeps the autograd graph of `penalty`" in findings[0].message
    meters = tmp_path / "meters.py"
    meters.write_text(meters.read_text().replace("value * n", "float(value) * n"))
    assert found(path.read_text(), str(path)) == []


# --- the other results of the call that gives the loss ---------------------------------------------

BESIDE_THE_LOSS = _src("""
    class Trainer:
        def train_step(self, samples):
            self.zero_grad()
            logging_outputs, sample_sizes = [], []
            for i, sample in enumerate(samples):
                sample = self._prepare_sample(sample)
                {unpack} = {call}
                self.optimizer.backward(loss)
                logging_outputs.append(logging_output)
                sample_sizes.append(sample_size){mark}
            logging_output = self.criterion.aggregate(logging_outputs)
            self.optimizer.step()
            return logging_output
""")


@pytest.mark.parametrize("call", [
    "self.task.get_loss(self.model, self.criterion, sample)",
    "compute_loss(self.model, sample)",
])
def test_a_loss_function_s_other_results_are_unknown_and_silent(call):
    """A loss function's results beside the loss (a count, a dict of logged numbers): unknown."""
    assert_clean(BESIDE_THE_LOSS.format(unpack="loss, sample_size, logging_output", call=call, mark=""))


def test_the_loss_itself_from_that_call_is_still_kept_with_its_graph():
    source = BESIDE_THE_LOSS.format(unpack="loss, sample_size, logging_output", call="compute_loss(self.model, sample)", mark="")
    source = source.replace("sample_sizes.append(sample_size)", "self.history.append(loss)  # <ACC002")
    assert_reported(source)


def test_a_list_made_anew_for_each_window_holds_the_loss_only_for_that_window():
    """`outputs, sizes = [], []` before the micro-steps, as two assignments would: reset every window."""
    source = BESIDE_THE_LOSS.format(unpack="loss, sample_size, logging_output", call="compute_loss(self.model, sample)", mark="")
    assert_clean(source.replace("sample_sizes.append(sample_size)", "sample_sizes.append(loss)"))



def test_the_parts_of_a_loss_from_a_function_in_another_module_under_another_name(tmp_path):
    """`loss_fn = my_loss` at module level, `my_loss` in another module returning the loss and its
    parts, each a call of a torch loss module: the parts are tensors with the step's graph."""
    _write(tmp_path, {
        "pyproject.toml": "",
        "losses.py": """
            import torch.nn as nn


            def my_loss(logits, boxes, labels, targets):
                mse = nn.MSELoss()
                regression = mse(boxes, targets)
                ce = nn.CrossEntropyLoss()(logits, labels)
                return ce + regression, regression, ce
        """,
        "train.py": """
            from losses import my_loss

            loss_fn = my_loss
            running, running_mse = 0.0, 0.0
            for images, labels, targets in loader:
                logits, boxes = net(images)
                loss, mse, ce = loss_fn(logits, boxes, labels, targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                running += loss.item()
                running_mse += mse
            print(running, running_mse)
        """,
    })
    path = tmp_path / "train.py"
    findings = found(path.read_text(), str(path))
    assert [(f.location.row, f.code) for f in findings] == [(12, "ACC002")]
    assert findings[0].fix is not None and findings[0].fix.applicability == "safe"
    path.write_text(path.read_text().replace("running_mse += mse", "running_mse += mse.item()"))
    assert found(path.read_text(), str(path)) == []

# --- an output on the way to the loss, from a module the names do not reveal --------------------------

OUTPUT_KEPT = _src("""
    def train(trunk, head_loss, loader, optimizer):
        features = []
        for x, y in loader:
            feat = trunk(x)
            loss = head_loss(feat, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            features.append(feat)  # <ACC002
        print(len(features))
""")


def test_an_output_the_loss_is_computed_from_is_kept():
    findings = assert_reported(OUTPUT_KEPT)
    assert findings[0].fix is None  # an output of unknown type may be a tuple or a dict: no `.detach()`


def test_a_count_made_from_the_same_batch_is_not_kept():
    assert_clean(OUTPUT_KEPT.replace("features.append(feat)  # <ACC002", "features.append(count_rows(x))"))


def test_trainer_keeping_an_unnamed_module_output_on_self():
    source = _src("""
        class Trainer:
            def train_step(self, x, y):
                feat = self.trunk(x)
                loss = self.head_loss(feat, y)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.features.append(feat)  # <ACC002
    """)
    assert_reported(source)


def test_gradient_helpers_in_another_module(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "",
        "penalties.py": """
            import torch


            def grad_norm(loss, params):
                grads = torch.autograd.grad(loss, params, retain_graph=True)
                return grads[0].norm()


            def gradient_penalty(critic, real):
                real.requires_grad_(True)
                score = critic(real).sum()
                grads = torch.autograd.grad(score, real, create_graph=True)[0]
                return ((grads.norm(2, dim=1) - 1) ** 2).mean()
        """,
        "train.py": """
            from penalties import grad_norm, gradient_penalty


            def train(model, critic, loader, optimizer, params):
                norms, penalties = [], []
                for x, y in loader:
                    loss = model(x, y)
                    norms.append(grad_norm(loss, params))
                    gp = gradient_penalty(critic, x)
                    (loss + gp).backward()
                    optimizer.step()
                    optimizer.zero_grad()
                    penalties.append(gp)
                print(len(norms), len(penalties))
        """,
    })
    path = tmp_path / "train.py"
    findings = found(path.read_text(), str(path))
    # the norm of gradients taken without create_graph is graph-free; the penalty is not
    assert [(f.location.row, f.code) for f in findings] == [(13, "ACC002")]
    assert "`penalties`" in findings[0].message


EVAL_METER = _src("""
    import torch


    class Meter:
        def __init__(self):
            self.outputs = []

        def add(self, output):
            self.outputs.append(output)

        def mean(self):
            return torch.cat(self.outputs).mean().item()


    def evaluate(model, val_loader):
        model.eval()
        meter = Meter()
        for x, y in val_loader:
            out = model(x)
            meter.add(out)  # <ACC002
        return meter.mean()
""")


def test_evaluation_pass_filling_a_meter_in_the_same_module():
    findings = assert_reported(EVAL_METER)
    assert "`Meter.add` keeps it in `self.outputs`" in findings[0].message
    assert findings[0].fix is not None and findings[0].fix.applicability == "unsafe"


@pytest.mark.parametrize("old, new", [
    ("meter.add(out)  # <ACC002", "meter.add(out.detach())"),
    ("self.outputs.append(output)", "self.outputs.append(output.detach())"),
    ("def evaluate(model, val_loader):", "@torch.no_grad()\ndef evaluate(model, val_loader):"),
    ("    return meter.mean()", "    return meter"),  # the meter itself is handed out
])
def test_evaluation_pass_with_a_meter_that_keeps_no_graph(old, new):
    assert old in EVAL_METER
    assert_clean(EVAL_METER.replace(old, new).replace("  # <ACC002", ""))


def test_trainer_validation_method_filling_a_meter():
    source = _src("""
        class Meter:
            def __init__(self):
                self.total = 0.0

            def update(self, value, n):
                self.total += value * n


        class Trainer:
            def validate(self, val_loader):
                self.model.eval()
                meter = Meter()
                for x, y in val_loader:
                    loss = self.criterion(self.model(x), y)
                    meter.update(loss, x.size(0))  # <ACC002
                print(meter.total)
    """)
    assert_reported(source)
    assert_clean(source.replace("meter.update(loss, x.size(0))  # <ACC002", "meter.update(loss.item(), x.size(0))"))


def test_evaluation_loop_taking_gradients_through_an_imported_grad():
    source = SALIENCY.format(create=", create_graph=True").replace(
        "import torch\n", "import torch\nfrom torch.autograd import grad\n").replace("torch.autograd.grad(", "grad(")
    findings = assert_reported(source)
    assert "no_grad" not in findings[0].message
    assert_fix(source, {"maps.append(g.abs())  # <ACC002": "maps.append(g.abs().detach())  # <ACC002"})


# --- an evaluation pass that walks its data in minibatches, inside a loop over files -------------------

PIECES_EVAL = _src("""
    import torch


    def evaluate(model, pieces, batch_size):
        model.eval()
        total_loss = 0
        for piece in pieces:
            samples = load(piece)
            for step in range({count}):
                batch = samples[step * batch_size: (step + 1) * batch_size]
                inputs = torch.tensor(batch)
                outputs = model(inputs, labels=inputs)
                loss = outputs[0]
                total_loss += loss  # <ACC002
        print(total_loss)
""")


def test_an_evaluation_walking_each_file_in_minibatches_keeps_every_graph():
    """`for step in range(len(samples) // batch_size)` slicing `samples` by the step walks data, one
    loop inside the loop over files: the total keeps every batch's graph (no `no_grad`)."""
    assert_reported(PIECES_EVAL.format(count="len(samples) // batch_size"))


def test_a_counted_loop_that_slices_nothing_by_its_step_is_no_data_walk():
    source = PIECES_EVAL.format(count="num_tiles").replace("samples[step * batch_size: (step + 1) * batch_size]", "samples")
    assert_clean(source.replace("  # <ACC002", ""))


def test_a_loss_module_scoring_its_inputs_in_minibatches_is_no_evaluation_pass():
    """Inside a loss's `forward`, the minibatch walk collects logits that its caller backward-s."""
    source = _src("""
        import torch


        class ListLoss(torch.nn.Module):
            def forward(self, pairs, labels):
                logits_list = []
                for i in range(0, len(pairs), self.mini_batch_size):
                    logits_list.append(self.model(pairs[i : i + self.mini_batch_size])[0])
                logits = torch.cat(logits_list)
                scores = torch.zeros(len(labels))
                scores[:len(logits)] = logits
                return torch.nn.functional.mse_loss(scores, labels)
    """)
    assert_clean(source)
