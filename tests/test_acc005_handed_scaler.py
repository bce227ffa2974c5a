"""ACC005 through an object handed to a loop in another module: `engine.py` runs
`loss_scaler(loss, opt, update_grad=(i + 1) % k == 0)` on a parameter whose class its own module
never shows; `main.py` makes the scaler (a project class whose `__call__` steps when told) and
hands it over. Read as that call runs it, the loop drops the last micro-batches of each epoch:
reported at the call in `main.py`, report only. Silent with an end-of-data clause, with a step
after the loop, and where the engine's own reading already sees the window (its own finding).
Script-style `main()` and trainer-class forms."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.snippets import findings, row

SCALER = """
import torch


class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()

    def __call__(self, loss, optimizer, update_grad=True):
        self._scaler.scale(loss).backward()
        if update_grad:
            self._scaler.step(optimizer)
            self._scaler.update()
"""

ENGINE = """
def train_one_epoch(model, loader, optimizer, loss_scaler, k):
    optimizer.zero_grad()
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        loss_scaler(loss, optimizer, update_grad={test})
        if {test}:
            optimizer.zero_grad()
    {after}
"""

SCRIPT_MAIN = """
from scaler import NativeScaler
from engine import train_one_epoch


def main(model, loader, optimizer, args):
    loss_scaler = NativeScaler()
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, loss_scaler, args.k)
"""

TRAINER_MAIN = """
from scaler import NativeScaler
from engine import train_one_epoch


class Runner:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k
        self.loss_scaler = NativeScaler()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            train_one_epoch(self.model, loader, self.optimizer, self.loss_scaler, self.k)
"""

WINDOW = "(i + 1) % k == 0"
FORMS = [SCRIPT_MAIN, TRAINER_MAIN]


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, main: str) -> dict[str, list]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "scaler.py").write_text(textwrap.dedent(SCALER).lstrip())
    (tmp_path / "engine.py").write_text(textwrap.dedent(engine).lstrip())
    (tmp_path / "main.py").write_text(textwrap.dedent(main).lstrip())
    monkeypatch.chdir(tmp_path)
    return {
        name: [f for f in findings((tmp_path / name).read_text(), name) if f[0] == "ACC005"]
        for name in ("engine.py", "main.py")
    }


@pytest.mark.parametrize("main", FORMS)
def test_a_handed_scaler_that_steps_when_told_drops_the_tail(tmp_path, monkeypatch, main):
    found = _project(tmp_path, monkeypatch, ENGINE.format(test=WINDOW, after="pass"), main)
    assert found["engine.py"] == []  # the engine alone cannot tell what loss_scaler does
    assert found["main.py"] == [("ACC005", row(main, "train_one_epoch(", last=True))]


def test_the_message_names_the_loop_and_the_handed_object(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "scaler.py").write_text(textwrap.dedent(SCALER).lstrip())
    (tmp_path / "engine.py").write_text(textwrap.dedent(ENGINE.format(test=WINDOW, after="pass")).lstrip())
    (tmp_path / "main.py").write_text(textwrap.dedent(SCRIPT_MAIN).lstrip())
    monkeypatch.chdir(tmp_path)
    from accumlint import engine

    result = engine.check_source((tmp_path / "main.py").read_text(), "main.py")
    [finding] = [f for f in result.findings if f.code == "ACC005"]
    assert finding.message.startswith("`train_one_epoch()` (engine.py:5) steps through the `loss_scaler` handed to it here")
    assert "never reach the optimizer step inside `loss_scaler()`" in finding.message
    assert finding.fix is None


@pytest.mark.parametrize("main", FORMS)
@pytest.mark.parametrize("test, after", [
    (f"{WINDOW} or i + 1 == len(loader)", "pass"),
    (WINDOW, "loss_scaler(torch.zeros(()), optimizer, update_grad=True)"),
])
def test_an_end_clause_or_a_step_after_the_loop_is_silent(tmp_path, monkeypatch, main, test, after):
    engine = "import torch\n" + ENGINE.format(test=test, after=after)
    assert _project(tmp_path, monkeypatch, engine, main) == {"engine.py": [], "main.py": []}


def test_a_window_the_engine_sees_itself_is_reported_there_only(tmp_path, monkeypatch):
    engine = "from scaler import NativeScaler\n" + ENGINE.format(test=WINDOW, after="pass") + textwrap.dedent("""

    def run(model, loader, optimizer, k):
        scaler = NativeScaler()
        train_one_epoch(model, loader, optimizer, scaler, k)
    """)
    found = _project(tmp_path, monkeypatch, engine, SCRIPT_MAIN)
    assert len(found["engine.py"]) == 1
    assert found["main.py"] == []


def test_the_message_names_only_the_object_that_steps(tmp_path, monkeypatch):
    """A project logger handed over beside the scaler is not what the step goes through."""
    engine_text = ENGINE.format(test=WINDOW, after="pass").replace(
        "loss_scaler, k):", "loss_scaler, k, log_writer=None):"
    )
    main = SCRIPT_MAIN.replace(
        "    loss_scaler = NativeScaler()\n",
        "    loss_scaler = NativeScaler()\n    log_writer = Logger()\n",
    ).replace("loss_scaler, args.k)", "loss_scaler, args.k, log_writer=log_writer)") + textwrap.dedent("""

    class Logger:
        def log(self, value):
            print(value)
    """)
    (tmp_path / ".git").mkdir()
    (tmp_path / "scaler.py").write_text(textwrap.dedent(SCALER).lstrip())
    (tmp_path / "engine.py").write_text(textwrap.dedent(engine_text).lstrip())
    (tmp_path / "main.py").write_text(textwrap.dedent(main).lstrip())
    monkeypatch.chdir(tmp_path)
    from accumlint import engine

    result = engine.check_source((tmp_path / "main.py").read_text(), "main.py")
    [finding] = [f for f in result.findings if f.code == "ACC005"]
    assert "steps through the `loss_scaler` handed to it here" in finding.message
