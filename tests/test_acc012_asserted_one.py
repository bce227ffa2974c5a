"""An assertion can pin the accumulation steps to 1 on one way through the loop:
`assert params.amp >= 0 or params.accumulate_gradients == 1` says the plain-precision path
(`if params.amp == -1:`) never accumulates, so its step on every micro-step is no ACC012, and the
windows of the other path are read as usual. The assertion's other side must be refuted by the
`if` on the step's way: `if params.amp == 0:` or `if args.fp16:` refute nothing, and without the
assertion the step on every micro-step beside a `% k` block is reported.
Forms: a trainer whose per-batch method's counter moves in another method, a script loop, and
the trainer in a module of its own driven from another."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from tests.snippets import findings_of

TRAINER = """
class Trainer:
    def __init__(self, params, model, optimizer):
        self.params = params
        self.model = model
        self.optimizer = optimizer
        self.n_iter = 0
        ASSERTION

    def optimize(self, loss):
        params = self.params
        if PLAIN_TEST:
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        else:
            if self.n_iter % params.accumulate_gradients == 0:
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
            else:
                loss.backward()

    def step(self, batch):
        loss = self.model(batch)
        self.optimize(loss)
        self.n_iter += 1

    def train(self, loader):
        for batch in loader:
            self.step(batch)
"""

SCRIPT = """
def train(args, model, loader, optimizer, scaler):
    assert args.fp16 or args.accumulation_steps == 1
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        if not args.fp16:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        else:
            scaler.scale(loss / args.accumulation_steps).backward()
            if (i + 1) % args.accumulation_steps == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
"""

PINNED = "assert params.amp >= 0 or params.accumulate_gradients == 1"


def _trainer(assertion: str = PINNED, plain_test: str = "params.amp == -1") -> str:
    return textwrap.dedent(TRAINER).replace("ASSERTION", assertion).replace("PLAIN_TEST", plain_test)


def _findings(text: str, select: str, filename: str = "trainer.py") -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in findings_of(text.encode(), path=filename, select=(select,))]


def _row(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_trainer_plain_path_pinned_to_one_by_assertion_is_silent():
    assert _findings(_trainer(), "ACC012") == []


def test_trainer_without_the_assertion_is_reported():
    text = _trainer(assertion="pass")
    assert _findings(text, "ACC012") == [("ACC012", _row(text, "self.optimizer.step()"))]


def test_trainer_branch_that_does_not_refute_the_other_side_is_reported():
    # amp == 0 satisfies `amp >= 0`: the assertion says nothing about k there.
    text = _trainer(plain_test="params.amp == 0")
    assert _findings(text, "ACC012") == [("ACC012", _row(text, "self.optimizer.step()"))]


def test_trainer_truthy_setting_refuted_by_negation():
    assert _findings(_trainer("assert params.fp16 or params.accumulate_gradients == 1", "not params.fp16"), "ACC012") == []
    text = _trainer("assert params.fp16 or params.accumulate_gradients == 1", "params.fp16")
    assert _findings(text, "ACC012") == [("ACC012", _row(text, "self.optimizer.step()"))]


def test_script_windows_of_the_other_path_are_read():
    # The plain path steps every micro-step only where k is 1, so the fp16 path's window stands:
    # its partial window at the end of each epoch is dropped (ACC005), and no ACC012 is given.
    text = textwrap.dedent(SCRIPT)
    assert _findings(text, "ACC012", "train.py") == []
    assert _findings(text, "ACC005", "train.py") == [("ACC005", _row(text, "if (i + 1) %"))]
    # Without the assertion `if not args.fp16:` is still a mode chosen once (tests of
    # test_windows_mode_switch.py): the fp16 path's window is read the same way.
    unpinned = text.replace("    assert args.fp16 or args.accumulation_steps == 1\n", "")
    assert _findings(unpinned, "ACC005", "train.py") == [("ACC005", _row(text, "if (i + 1) %") - 1)]


def test_trainer_in_its_own_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    trainer = tmp_path / "trainer.py"
    trainer.write_text(_trainer())
    (tmp_path / "main.py").write_text(
        "from trainer import Trainer\n\n\ndef main(params, model, optimizer, loader):\n"
        "    Trainer(params, model, optimizer).train(loader)\n"
    )
    assert findings_of(trainer.read_bytes(), path=str(trainer), select=("ACC012",)) == []
    trainer.write_text(_trainer(assertion="pass"))
    result = engine.check_source(trainer.read_bytes(), str(trainer), select=("ACC012",))
    assert [f.location.row for f in result.findings] == [_row(_trainer(), "self.optimizer.step()")]
