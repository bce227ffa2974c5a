"""ACC009 when `no_sync()` is entered through a project helper that returns it
(`with maybe_no_sync(step):`, the helper returning `model.no_sync()` on non-final micro-steps and
an empty context otherwise) and the helper's block holds only the backward: DDP reads the sync
flag in the forward, so the forward outside the block still syncs every micro-step. With the
forward inside the block it is right and not reported.
Forms: a script with the helper as a closure, a trainer whose helper is a method, a helper in a
module of its own taking the model as a parameter."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint.engine import check_source
from tests.snippets import findings_of

SCRIPT = """
import contextlib
import torch


def train(model, loader, optimizer, args):
    model = torch.nn.parallel.DistributedDataParallel(model)

    def maybe_no_sync(step):
        if (step + 1) % args.gradient_accumulation_steps != 0:
            return model.no_sync()
        return contextlib.ExitStack()

    for step, batch in enumerate(loader):
        BODY
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""

TRAINER = """
import contextlib
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, model, optimizer, args):
        self.model = DistributedDataParallel(model)
        self.optimizer = optimizer
        self.args = args

    def _maybe_no_sync(self, step):
        if (step + 1) % self.args.gradient_accumulation_steps != 0:
            return self.model.no_sync()
        return contextlib.nullcontext()

    def train(self, loader):
        for step, batch in enumerate(loader):
            BODY
            if (step + 1) % self.args.gradient_accumulation_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""

BACKWARD_ONLY = """loss = MODEL(batch) / K
        with HELPER:
            loss.backward()"""

FORWARD_INSIDE = """with HELPER:
            loss = MODEL(batch) / K
            loss.backward()"""


def _fill(template: str, body: str, model: str, k: str, helper: str, indent: str = "") -> str:
    body = body.replace("MODEL", model).replace("K", k).replace("HELPER", helper).replace("\n", "\n" + indent)
    return textwrap.dedent(template).replace("BODY", body)


def _rows(text: str, filename: str = "train.py") -> list[int]:
    return [f.location.row for f in findings_of(text.encode(), path=filename, select=("ACC009",))]


def _row(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_script_closure_helper_around_backward_only():
    text = _fill(SCRIPT, BACKWARD_ONLY, "model", "args.gradient_accumulation_steps", "maybe_no_sync(step)")
    result = check_source(text.encode(), "train.py", select=("ACC009",))
    (finding,) = result.findings
    assert finding.location.row == _row(text, "with maybe_no_sync(step):")
    assert "`maybe_no_sync(step)` enters `model.no_sync()` around only the backward pass" in finding.message


def test_script_closure_helper_around_forward_and_backward_is_right():
    text = _fill(SCRIPT, FORWARD_INSIDE, "model", "args.gradient_accumulation_steps", "maybe_no_sync(step)")
    assert _rows(text) == []


def test_trainer_method_helper():
    k = "self.args.gradient_accumulation_steps"
    text = _fill(TRAINER, BACKWARD_ONLY, "self.model", k, "self._maybe_no_sync(step)", "    ")
    assert _rows(text) == [_row(text, "with self._maybe_no_sync(step):")]
    assert _rows(_fill(TRAINER, FORWARD_INSIDE, "self.model", k, "self._maybe_no_sync(step)", "    ")) == []


def test_helper_in_another_module_takes_the_model(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "sync.py").write_text(
        "import contextlib\n\n\ndef maybe_no_sync(ddp_model, last):\n"
        "    return contextlib.nullcontext() if last else ddp_model.no_sync()\n"
    )
    script = _fill(SCRIPT, BACKWARD_ONLY, "model", "args.gradient_accumulation_steps", "sync_of(model, False)")
    script = script.replace("import torch\n", "import torch\nfrom sync import maybe_no_sync as sync_of\n")
    loop = tmp_path / "train.py"
    loop.write_text(script)
    found = findings_of(loop.read_bytes(), path=str(loop), select=("ACC009",))
    assert [f.location.row for f in found] == [_row(script, "with sync_of(model, False):")]
    assert "`model.no_sync()`" in found[0].message


def test_trainer_direct_no_sync_reads_the_called_model_attribute():
    # `self.model(batch)` inside `with self.model.no_sync():` is the forward, though it is a call.
    k = "self.args.gradient_accumulation_steps"
    inside = _fill(TRAINER, FORWARD_INSIDE, "self.model", k, "self.model.no_sync()", "    ")
    assert _rows(inside) == []
    outside = _fill(TRAINER, BACKWARD_ONLY, "self.model", k, "self.model.no_sync()", "    ")
    assert _rows(outside) == [_row(outside, "with self.model.no_sync():")]


FLAG_TRAINER = """
import contextlib
from torch.nn.parallel import DistributedDataParallel


class Brain:
    def __init__(self, modules, optimizer, k):
        self.modules = {}
        for name, module in modules.items():
            module = DistributedDataParallel(module)
            self.modules[name] = module
        self.optimizer = optimizer
        self.k = k
        self.step = 0

    @contextlib.contextmanager
    def no_sync(self, use=True):
        if use:
            for module in self.modules.values():
                module.require_backward_grad_sync = False
            yield
            for module in self.modules.values():
                module.require_backward_grad_sync = True
        else:
            yield

    def fit_batch(self, batch):
        self.step += 1
        should_step = self.step % self.k == 0
        BODY
        if should_step:
            self.optimizer.step()
            self.optimizer.zero_grad()

    def fit(self, loader):
        for batch in loader:
            self.fit_batch(batch)
"""

FLAG_BACKWARD_ONLY = """loss = self.compute_objectives(self.compute_forward(batch), batch)
        with self.no_sync(not should_step):
            (loss / self.k).backward()"""

FLAG_FORWARD_INSIDE = """with self.no_sync(not should_step):
            loss = self.compute_objectives(self.compute_forward(batch), batch)
            (loss / self.k).backward()"""


def _flag_trainer(body: str) -> str:
    return textwrap.dedent(FLAG_TRAINER).replace("BODY", body)


def test_project_context_manager_that_clears_the_sync_flag():
    text = _flag_trainer(FLAG_BACKWARD_ONLY)
    (finding,) = findings_of(text.encode(), path="brain.py", select=("ACC009",))
    assert finding.location.row == _row(text, "with self.no_sync(not should_step):")
    assert "`self.no_sync(not should_step)` turns off DDP's sync around only the backward pass" in finding.message
    assert _rows(_flag_trainer(FLAG_FORWARD_INSIDE), "brain.py") == []


def test_project_context_manager_in_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "syncing.py").write_text(
        "import contextlib\n\n\n@contextlib.contextmanager\ndef sync_off(modules):\n"
        "    with contextlib.ExitStack() as stack:\n"
        "        for module in modules:\n"
        "            stack.enter_context(module.no_sync())\n"
        "        yield\n"
    )
    body = "loss = model(batch) / args.gradient_accumulation_steps\n        with sync_off([model]):\n            loss.backward()"
    script = textwrap.dedent(SCRIPT).replace("BODY", body)
    script = script.replace("import torch\n", "import torch\nfrom syncing import sync_off\n")
    loop = tmp_path / "train.py"
    loop.write_text(script)
    found = findings_of(loop.read_bytes(), path=str(loop), select=("ACC009",))
    assert [f.location.row for f in found] == [_row(script, "with sync_off([model]):")]
