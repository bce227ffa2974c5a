"""ACC010 on an engine known by what the code does with it: `model.backward(loss)` and
`model.step()` on one object, on every micro-step, while the loop gates other work (an EMA
update, a schedule) on `(i + 1) % k == 0`. That object runs backward and step itself (a DeepSpeed
engine handed in as `model`, built where this function cannot see it), so it is the one that
accumulates over k, and its backward divides by k: a hand division by k divides twice.

Forms: a function handed the engine, a trainer class whose step sits in a method, and a helper
module driven from another module. Twins: the engine step gated on the window (the loop itself
accumulates, the engine built with 1), a division by something the loop does not gate on, and a
tensor's own backward with a gradient argument."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings_of


FUNCTION = """
def train_one_epoch(model, loader, update_freq, model_ema=None):
    model.zero_grad()
    for it, (x, y) in enumerate(loader):
        loss = model(x, y)
        {divide}
        model.backward(loss)
        {step}
        if (it + 1) % update_freq == 0 and model_ema is not None:
            model_ema.update(model)
"""

TRAINER = """
class Trainer:
    def __init__(self, engine, loader, k):
        self.engine = engine
        self.loader = loader
        self.k = k

    def fit(self, scheduler):
        for step, batch in enumerate(self.loader):
            loss = self.engine(batch).mean()
            {divide}
            self.engine.backward(loss)
            {step}
            if step % self.k == 0:
                scheduler.step()
"""


def _codes(source: str, **parts: str) -> list[tuple[str, int]]:
    text = textwrap.dedent(source)
    for key, value in parts.items():
        text = text.replace("{" + key + "}", value)
    return [(f.code, f.location.row) for f in findings_of(text.encode(), path="train.py")]


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def test_function_handed_an_engine_divides_twice():
    found = _codes(FUNCTION, divide="loss /= update_freq", step="model.step()")
    assert found == [("ACC010", _row(FUNCTION, "model.backward(loss)"))]


def test_function_engine_without_hand_division_is_clean():
    # The engine divides by itself: no ACC001 either.
    assert _codes(FUNCTION, divide="pass", step="model.step()") == []


def test_engine_step_gated_on_the_window_is_the_loops_own_accumulation():
    gated = "if (it + 1) % update_freq == 0:\n            model.step()"
    assert [c for c, _ in _codes(FUNCTION, divide="loss /= update_freq", step=gated)] == []


def test_division_by_what_the_loop_does_not_gate_on_is_not_k():
    found = _codes(FUNCTION, divide="loss = loss / x.size(0)", step="model.step()")
    assert [c for c, _ in found if c == "ACC010"] == []


def test_tensor_backward_with_a_gradient_is_no_engine():
    # `out.backward(grad)` with no `out.step()`: a tensor's backward, not an engine's.
    source = FUNCTION.replace("model.backward(loss)", "loss.backward(torch.ones_like(loss))")
    assert [c for c, _ in _codes(source, divide="loss /= update_freq", step="pass") if c == "ACC010"] == []


def test_trainer_method_divides_twice():
    found = _codes(TRAINER, divide="loss = loss / self.k", step="self.engine.step()")
    assert found == [("ACC010", _row(TRAINER, "self.engine.backward(loss)"))]
    gated = "if (step + 1) % self.k == 0:\n                self.engine.step()"
    assert [c for c, _ in _codes(TRAINER, divide="loss = loss / self.k", step=gated) if c == "ACC010"] == []


def test_helper_module_driven_from_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "engine_for_training.py").write_text(
        textwrap.dedent(FUNCTION).replace("{divide}", "loss /= update_freq").replace("{step}", "model.step()")
    )
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent("""
        from engine_for_training import train_one_epoch


        def main(args, ds_init, model, loader):
            model, optimizer, _, _ = ds_init(args=args, model=model)
            train_one_epoch(model, loader, args.update_freq)
    """))
    findings = {}
    for path in (tmp_path / "engine_for_training.py", main):
        findings[path.name] = [(f.code, f.location.row) for f in findings_of(path.read_bytes(), path=str(path))]
    assert findings["engine_for_training.py"] == [("ACC010", _row(FUNCTION, "model.backward(loss)"))]
    assert findings["main.py"] == []
