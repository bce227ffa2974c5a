"""Faults inside helpers that a training loop calls: reported at the faulty statement (in the
helper, in another module), the message naming the call path; fixes only in the checked file and
only when safe."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from tests.snippets import findings_of


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def findings(source: str, path: str = "t.py"):
    return {(f.code, f.location.row): f for f in findings_of(textwrap.dedent(source).lstrip(), path=path)}


def line_of(source: str, text: str) -> int:
    lines = textwrap.dedent(source).lstrip().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


# --- ACC008: a scheduler stepped in a helper called every micro-step -----------------------------

SCHEDULER = """
from transformers import get_linear_schedule_with_warmup


class Trainer:
    def __init__(self, model, opt, loader, k, epochs):
        self.model, self.opt, self.k = model, opt, k
        self.scheduler = get_linear_schedule_with_warmup(opt, 0, {length})

    def _after_micro_step(self):
        {body}

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            loss = self.model(batch).mean() / self.k
            loss.backward()
            self._after_micro_step()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.opt.step()
                self.opt.zero_grad()
"""


def _scheduler(length="len(loader) // k * epochs", body="self.scheduler.step()") -> str:
    return SCHEDULER.format(length=length, body=body)


def test_a_scheduler_stepped_in_a_method_called_every_micro_step():
    source = _scheduler()
    found = findings(source)
    row = line_of(source, "self.scheduler.step()")
    assert set(found) == {("ACC008", row)}
    finding = found[("ACC008", row)]
    call = line_of(source, "self._after_micro_step()")
    assert f"(called every micro-step from `train_epoch`, line {call})" in finding.message
    assert "counts optimizer updates" in finding.message
    assert finding.fix is None  # moving it would change the helper for every caller


def test_a_helper_scheduler_sized_in_micro_steps_is_clean():
    assert findings(_scheduler(length="len(loader) * epochs")) == {}


def test_a_helper_that_gates_its_own_scheduler_is_clean():
    body = "if self.opt_steps % self.k == 0:\n            self.scheduler.step()"
    assert findings(_scheduler(body=body)) == {}


def test_a_helper_called_inside_the_step_block_is_clean():
    source = _scheduler().replace(
        "            self._after_micro_step()\n", ""
    ).replace("                self.opt.zero_grad()\n", "                self.opt.zero_grad()\n                self._after_micro_step()\n")
    assert "_after_micro_step()" in source.split("def train_epoch")[1]
    assert findings(source) == {}


def test_the_call_path_names_every_helper_in_between():
    source = _scheduler(body="self._advance()") + """
    def _advance(self):
        self.scheduler.step()
"""
    found = findings(source)
    row = line_of(source, "self.scheduler.step()")
    assert set(found) == {("ACC008", row)}
    assert ", through `_advance()`)" in found[("ACC008", row)].message


SCHEDULER_PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/hooks.py": """
        def on_micro_step(scheduler, scaler):
            scheduler.step()
            scaler.update()
    """,
    "train.py": """
        import torch
        from transformers import get_cosine_schedule_with_warmup
        from pkg.hooks import on_micro_step


        def train(model, opt, loader, k, epochs):
            scaler = torch.cuda.amp.GradScaler()
            scheduler = get_cosine_schedule_with_warmup(opt, 0, len(loader) // k * epochs)
            for i, batch in enumerate(loader):
                loss = model(batch).mean() / k
                scaler.scale(loss).backward()
                on_micro_step(scheduler, scaler)
                if (i + 1) % k == 0 or i + 1 == len(loader):
                    scaler.step(opt)
                    opt.zero_grad()
    """,
}


def test_a_helper_in_another_module_is_reported_there(tmp_path, monkeypatch):
    _write(tmp_path, SCHEDULER_PROJECT)
    monkeypatch.chdir(tmp_path)
    hooks = str(Path("pkg") / "hooks.py")
    found = {(f.filename, f.code, f.location.row): f for f in findings_of((tmp_path / "train.py").read_bytes(), path="train.py")}
    # scheduler.step(): its length is read where the loop's call hands the scheduler in (train.py);
    # scaler.update() every micro-step is wrong whatever the schedule.
    assert set(found) == {(hooks, "ACC008", 2), (hooks, "ACC008", 3)}
    schedule = found[(hooks, "ACC008", 2)]
    assert "its length (`len(loader) // k * epochs`, line 8 of `train.py`) counts optimizer updates" in schedule.message
    for finding in found.values():
        assert "(called every micro-step from `train`, line 12)" in finding.message
        assert finding.fix is None


def test_a_helper_handed_a_schedule_sized_in_micro_steps_is_clean(tmp_path, monkeypatch):
    files = dict(SCHEDULER_PROJECT)
    files["train.py"] = files["train.py"].replace("len(loader) // k * epochs", "len(loader) * epochs")
    _write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    result = engine.check_source((tmp_path / "train.py").read_bytes(), "train.py")
    assert {(f.code, f.location.row) for f in result.findings} == {("ACC008", 3)}  # scaler.update() only


# --- ACC003: state on `self` carried by a method the loop calls ----------------------------------

STATE = """
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.rnn = nn.LSTM(10, 20)
        self.hidden = None

    def forward_step(self, x):
        {prepare}out, self.hidden = self.rnn(x, self.hidden)
        return out

    def train(self, loader):
        for x, y in loader:
            {reset}out = self.forward_step(x)
            loss = self.crit(out, y)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
"""


def _state(prepare="", reset="") -> str:
    return STATE.format(prepare=prepare, reset=reset)


def test_state_carried_by_a_method_called_every_iteration():
    source = _state()
    found = findings(source)
    row = line_of(source, "out, self.hidden = self.rnn(")
    assert set(found) == {("ACC003", row)}
    finding = found[("ACC003", row)]
    call = line_of(source, "out = self.forward_step(x)")
    assert f"(called every iteration from `train`, line {call})" in finding.message
    assert finding.fix is not None and finding.fix.applicability == "safe"  # an LSTM's (h, c): shape known
    fixed = engine.fix_source(textwrap.dedent(source).lstrip(), "t.py").fixed_source
    lines = fixed.splitlines()
    backward = next(i for i, line in enumerate(lines) if "loss.backward()" in line)
    assert lines[backward + 1] == "            self.hidden = tuple(s.detach() for s in self.hidden)"
    assert engine.check_source(fixed, "t.py").findings == []
    assert engine.fix_source(fixed, "t.py").fixes_applied == 0  # idempotent


def test_state_managed_by_the_loop_or_the_method_is_clean():
    assert findings(_state(reset="self.hidden = None\n            ")) == {}
    assert findings(_state(prepare="self.hidden = self.init_hidden(x.size(0))\n        ")) == {}
    assert findings(_state(prepare="self.hidden = repackage_hidden(self.hidden)\n        ")) == {}
    detached = _state().replace(
        "            loss.backward()\n",
        "            loss.backward()\n            self.hidden = tuple(h.detach() for h in self.hidden)\n",
    )
    assert findings(detached) == {}


def test_state_of_a_method_with_no_backward_after_it_is_clean():
    assert findings(_state().replace("            loss.backward()\n", "")) == {}
    # another object's method: its `self` is not the loop's object
    assert findings(_state().replace("out = self.forward_step(x)", "out = self.other.forward_step(x)")) == {}


STATE_PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/base.py": """
        class RecurrentBase:
            def forward_step(self, x):
                out, self.hidden = self.rnn(x, self.hidden)
                return out
    """,
    "train.py": """
        import torch.nn as nn
        from pkg.base import RecurrentBase


        class Trainer(RecurrentBase):
            def __init__(self):
                self.rnn = nn.GRU(10, 20)
                self.hidden = None

            def train(self, loader):
                for x, y in loader:
                    out = self.forward_step(x)
                    loss = self.crit(out, y)
                    loss.backward()
                    self.opt.step()
                    self.opt.zero_grad()
    """,
}


def test_state_carried_by_a_base_class_method_in_another_module(tmp_path, monkeypatch):
    _write(tmp_path, STATE_PROJECT)
    monkeypatch.chdir(tmp_path)
    base = str(Path("pkg") / "base.py")
    found = {(f.filename, f.code, f.location.row): f for f in findings_of((tmp_path / "train.py").read_bytes(), path="train.py")}
    assert set(found) == {(base, "ACC003", 3)}
    finding = found[(base, "ACC003", 3)]
    assert "(called every iteration from `train`, line 12)" in finding.message
    assert finding.fix is None  # never an edit to another file


def test_a_finding_in_another_module_keeps_its_file_when_read_from_the_cache(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from accumlint.cli import cli

    _write(tmp_path, SCHEDULER_PROJECT)
    monkeypatch.chdir(tmp_path)

    def located() -> list[str]:
        output = CliRunner().invoke(cli, ["check", "--jobs", "1", "train.py"]).output
        return sorted(line.split(": ")[0] for line in output.splitlines() if ": ACC" in line)

    first = located()
    assert first == [f"{Path('pkg') / 'hooks.py'}:2:5", f"{Path('pkg') / 'hooks.py'}:3:5"]
    assert located() == first  # the cached result names the helper's module, not train.py


# --- ACC002: a method the loop calls keeps its argument on the object ----------------------------

KEPT = """
class Trainer:
    def __init__(self, model, opt, crit):
        self.model, self.opt, self.crit = model, opt, crit
        self.history = []

    def _record(self, value):
        self.history.append(value)

    def train(self, loader):
        for x, y in loader:
            loss = self.crit(self.model(x), y)
            loss.backward()
            self._record({arg})
            self.opt.step()
            self.opt.zero_grad()
"""


def test_a_method_that_keeps_the_loss_on_the_object():
    source = KEPT.format(arg="loss")
    found = findings(source)
    row = line_of(source, "self.history.append(value)")
    assert set(found) == {("ACC002", row)}
    finding = found[("ACC002", row)]
    call = line_of(source, "self._record(loss)")
    assert f"(called every iteration from `train`, line {call}, with `loss`)" in finding.message
    assert "pass `loss.detach()`" in finding.message
    assert finding.fix is None  # `value` may be a number from another caller


def test_a_method_handed_a_graph_free_value_is_clean():
    assert findings(KEPT.format(arg="loss.item()")) == {}
    assert findings(KEPT.format(arg="loss.detach()")) == {}
    assert findings(KEPT.format(arg="x.size(0)")) == {}


def test_a_store_started_anew_within_the_loop_or_handed_out_is_clean():
    cleared = KEPT.format(arg="loss").replace(
        "            self.opt.zero_grad()\n", "            self.opt.zero_grad()\n            self.history = []\n"
    )
    assert findings(cleared) == {}
    handed_out = KEPT.format(arg="loss") + "\n    def losses(self):\n        return self.history\n"
    assert findings(handed_out) == {}
    deferred = KEPT.format(arg="loss").replace("self.history.append(value)", "self.pending = self.pending + value") + (
        "\n    def flush(self):\n        self.pending.backward()\n"
    )
    assert findings(deferred) == {}


KEPT_PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/base.py": """
        class LoggingBase:
            def log_loss(self, loss):
                self.epoch_loss += loss
    """,
    "train.py": """
        from pkg.base import LoggingBase


        class Trainer(LoggingBase):
            def train_epoch(self, loader):
                self.epoch_loss = 0.0
                for x, y in loader:
                    loss = self.crit(self.model(x), y)
                    loss.backward()
                    self.log_loss(loss)
                    self.opt.step()
                    self.opt.zero_grad()
    """,
}


def test_a_base_class_in_another_module_keeps_the_loss(tmp_path, monkeypatch):
    _write(tmp_path, KEPT_PROJECT)
    monkeypatch.chdir(tmp_path)
    base = str(Path("pkg") / "base.py")
    found = {(f.filename, f.code, f.location.row): f for f in findings_of((tmp_path / "train.py").read_bytes(), path="train.py")}
    # `self.epoch_loss = 0.0` before the loop starts it once per epoch: it grows over the epoch
    assert set(found) == {(base, "ACC002", 3)}
    assert "(called every iteration from `train_epoch`, line 10, with `loss`)" in found[(base, "ACC002", 3)].message
    assert found[(base, "ACC002", 3)].fix is None


# --- ACC008: a scheduler handed in as a parameter ------------------------------------------------

HANDED_IN = """
from transformers import get_linear_schedule_with_warmup


def train_one_epoch(model, opt, loader, lr_scheduler, accum_iter):
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / accum_iter
        loss.backward()
        lr_scheduler.step()
        if (i + 1) % accum_iter == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()


def main(args, model, opt, loader):
    sched = get_linear_schedule_with_warmup(opt, 10, {length})
    for epoch in range(args.epochs):
        train_one_epoch({call})
"""

_POSITIONAL = "model, opt, loader, sched, args.accum_iter"
_KEYWORDS = "model, opt, loader, lr_scheduler=sched, accum_iter=args.accum_iter"


def test_a_scheduler_parameter_is_followed_to_what_its_caller_builds():
    for call in (_POSITIONAL, _KEYWORDS):
        source = HANDED_IN.format(length="len(loader) // args.accum_iter * args.epochs", call=call)
        found = findings(source)
        assert set(found) == {("ACC008", line_of(source, "lr_scheduler.step()"))}
        assert "its length (`len(loader) // args.accum_iter * args.epochs`, line 15)" in next(iter(found.values())).message
    assert findings(HANDED_IN.format(length="len(loader) * args.epochs", call=_POSITIONAL)) == {}


def test_callers_handing_in_different_schedulers_leave_the_unit_unknown():
    source = HANDED_IN.format(length="len(loader) // args.accum_iter * args.epochs", call=_POSITIONAL) + """
    train_one_epoch(model, opt, loader, make_scheduler(opt), args.accum_iter)
"""
    assert findings(source) == {}


def test_a_scheduler_given_to_a_trainer_at_construction():
    source = """
        from transformers import get_linear_schedule_with_warmup


        class Trainer:
            def __init__(self, model, opt, sched, k):
                self.model, self.opt, self.sched, self.k = model, opt, sched, k

            def fit(self, loader):
                for i, batch in enumerate(loader):
                    loss = self.model(batch).mean() / self.k
                    loss.backward()
                    self.sched.step()
                    if (i + 1) % self.k == 0 or i + 1 == len(loader):
                        self.opt.step()
                        self.opt.zero_grad()


        def main(args, model, opt, loader):
            total = len(loader) // args.accum * args.epochs
            sched = get_linear_schedule_with_warmup(opt, 10, total)
            Trainer(model, opt, sched, args.accum).fit(loader)
    """
    assert set(findings(source)) == {("ACC008", line_of(source, "self.sched.step()"))}
    assert findings(source.replace("len(loader) // args.accum * args.epochs", "len(loader) * args.epochs")) == {}


BASE_SCHEDULER_PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/base.py": """
        class BaseTrainer:
            def after_backward(self):
                self.scheduler.step()
    """,
    "train.py": """
        from transformers import get_linear_schedule_with_warmup
        from pkg.base import BaseTrainer


        class Trainer(BaseTrainer):
            def __init__(self, model, opt, loader, k, epochs):
                self.model, self.opt, self.k = model, opt, k
                self.scheduler = get_linear_schedule_with_warmup(opt, 0, {length})

            def train_epoch(self, loader):
                for i, batch in enumerate(loader):
                    loss = self.model(batch).mean() / self.k
                    loss.backward()
                    self.after_backward()
                    if (i + 1) % self.k == 0 or i + 1 == len(loader):
                        self.opt.step()
                        self.opt.zero_grad()
    """,
}


def test_a_base_class_steps_the_scheduler_the_subclass_builds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = str(Path("pkg") / "base.py")
    for length, expected in (("len(loader) // k * epochs", {(base, "ACC008", 3)}), ("len(loader) * epochs", set())):
        files = dict(BASE_SCHEDULER_PROJECT)
        files["train.py"] = files["train.py"].format(length=length)
        _write(tmp_path, files)
        result = engine.check_source((tmp_path / "train.py").read_bytes(), "train.py")
        assert {(f.filename, f.code, f.location.row) for f in result.findings} == expected
        for finding in result.findings:
            assert "(called every micro-step from `train_epoch`, line 14)" in finding.message
            assert "line 8 of `train.py`" in finding.message


# --- ACC002: a function of the project that stores its argument into the caller's container ------

RECORD = """
def record(store, value):
    store.append(value)


def train(model, opt, crit, loader):
    losses = []
    for x, y in loader:
        loss = crit(model(x), y)
        loss.backward()
        record(losses, {value})
        opt.step()
        opt.zero_grad()
    {tail}
"""


def test_a_helper_that_appends_the_loss_to_the_callers_list():
    source = RECORD.format(value="loss", tail="print(sum(losses))")
    found = findings(source)
    row = line_of(source, "record(losses, loss)")
    assert set(found) == {("ACC002", row)}  # at the call: the graph-carrying value is handed in there
    finding = found[("ACC002", row)]
    assert "(`record()` keeps it in `store`, line 2)" in finding.message
    fixed = engine.fix_source(textwrap.dedent(source).lstrip(), "t.py").fixed_source
    assert "record(losses, loss.detach())" in fixed and "store.append(value)" in fixed
    assert engine.check_source(fixed, "t.py").findings == []


def test_a_helper_store_that_cannot_grow_or_is_handed_out_is_clean():
    assert findings(RECORD.format(value="loss.item()", tail="print(sum(losses))")) == {}
    assert findings(RECORD.format(value="loss", tail="return losses")) == {}  # the caller's use is not in sight
    per_step = RECORD.format(value="loss", tail="print(sum(losses))").replace(
        "        opt.zero_grad()\n", "        opt.zero_grad()\n        losses = []\n"
    )
    assert "losses = []\n    print" in per_step
    assert findings(per_step) == {}


RECORD_PROJECT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/meters.py": """
        def accumulate(totals, name, value):
            totals[name] += value
    """,
    "train.py": """
        from collections import defaultdict

        from pkg.meters import accumulate


        def train(model, opt, crit, loader):
            totals = defaultdict(float)
            for x, y in loader:
                loss = crit(model(x), y)
                loss.backward()
                accumulate(totals, "loss", loss)
                opt.step()
                opt.zero_grad()
            print(dict(totals))
    """,
}


def test_a_helper_of_another_module_that_sums_the_loss_into_the_callers_dict(tmp_path, monkeypatch):
    _write(tmp_path, RECORD_PROJECT)
    monkeypatch.chdir(tmp_path)
    found = {(f.filename, f.code, f.location.row): f for f in findings_of((tmp_path / "train.py").read_bytes(), path="train.py")}
    assert set(found) == {("train.py", "ACC002", 11)}
    assert "(`accumulate()` keeps it in `totals`, line 2 of `meters.py`)" in found[("train.py", "ACC002", 11)].message
    # the same through the module's name
    source = RECORD_PROJECT["train.py"].replace("from pkg.meters import accumulate", "import pkg.meters as meters")
    _write(tmp_path, {"train.py": source.replace("accumulate(totals", "meters.accumulate(totals")})
    result = engine.check_source((tmp_path / "train.py").read_bytes(), "train.py")
    assert {(f.code, f.location.row) for f in result.findings} == {("ACC002", 11)}


def test_state_carried_two_methods_down_names_the_method_in_between():
    source = """
        import torch.nn as nn


        class Trainer:
            def __init__(self):
                self.rnn = nn.GRU(10, 20)
                self.hidden = None

            def forward(self, x):
                out, self.hidden = self.rnn(x, self.hidden)
                return out

            def training_step(self, batch):
                x, y = batch
                return self.crit(self.forward(x), y)

            def train(self, loader):
                for batch in loader:
                    loss = self.training_step(batch)
                    loss.backward()
                    self.opt.step()
                    self.opt.zero_grad()
    """
    found = findings(source)
    row = line_of(source, "out, self.hidden = self.rnn(")
    assert set(found) == {("ACC003", row)}
    call = line_of(source, "loss = self.training_step(batch)")
    assert f"(called every iteration from `train`, line {call}, through `training_step()`)" in found[("ACC003", row)].message
    fixed = engine.fix_source(textwrap.dedent(source).lstrip(), "t.py").fixed_source
    assert "            loss.backward()\n            self.hidden = self.hidden.detach()\n" in fixed
    # a method that computes something it does not return (logging) is not on the path
    logged = source.replace("return self.crit(self.forward(x), y)", "self.log(self.forward(x))\n                return self.crit(x, y)")
    assert findings(logged) == {}
