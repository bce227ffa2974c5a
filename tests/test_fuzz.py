"""Fuzzing: generated programs and mutated training loops never crash the engine, and every
fix it writes still compiles. ACCUMLINT_FUZZ_EXAMPLES=N runs N examples per test (default 30)."""

from __future__ import annotations

import os
import re

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accumlint.engine import check_source, fix_source

EXAMPLES = int(os.environ.get("ACCUMLINT_FUZZ_EXAMPLES", "30"))
# The normal run is derandomized (same examples every time); a long run explores.
_COMMON = dict(deadline=None, derandomize="ACCUMLINT_FUZZ_EXAMPLES" not in os.environ,
               suppress_health_check=list(HealthCheck))
FUZZ = settings(max_examples=EXAMPLES, **_COMMON)
# from_node programs are large and slow to generate (LibCST codegen): a third as many.
FUZZ_NODES = settings(max_examples=max(10, EXAMPLES // 3), **_COMMON)


def _no_crash_and_fixes_compile(source: str) -> None:
    checked = check_source(source, "fuzz.py")
    assert checked.error is None or "\n" not in checked.error.message
    for unsafe in (False, True):
        fixed = fix_source(source, "fuzz.py", unsafe_fixes=unsafe)
        if fixed.fixed_source is not None:
            compile(fixed.fixed_source, "fixed.py", "exec")
            # Fix twice = fix once.
            assert fix_source(fixed.fixed_source, "fuzz.py", unsafe_fixes=unsafe).fixed_source is None


# Generated programs rarely contain a training loop; appending one makes the rules run on them.
TAIL = "\nfor i, b in enumerate(loader):\n    loss = model(b)\n    loss.backward()\n    if (i + 1) % k == 0:\n        opt.step()\n"


@FUZZ
@given(hypothesmith.from_grammar(), st.booleans())
def test_grammar_programs(source, with_loop):
    _no_crash_and_fixes_compile(source + TAIL if with_loop else source)


@FUZZ_NODES
@given(hypothesmith.from_node(), st.booleans())
def test_node_programs(source, with_loop):
    _no_crash_and_fixes_compile(source + TAIL if with_loop else source)


LOOPS = [
    """for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
    """total = 0
for step, batch in enumerate(train_loader):
    with autocast():
        loss = model(**batch).loss
    scaler.scale(loss).backward()
    total += loss
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.zero_grad()
    if step % grad_accum == grad_accum - 1:
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
    scheduler.step()
""",
    """h = model.init_hidden(bs)
losses = []
for i, (x, y) in enumerate(data):
    out, h = model(x, h)
    loss = crit(out, y) / k
    loss.backward(retain_graph=True)
    losses.append(loss)
    if not (i + 1) % k:
        opt.step()
        opt.zero_grad()
""",
]
GATES = ["(i + 1) % accum_steps == 0", "not (i + 1) % accum_steps", "i % accum_steps == accum_steps - 1",
         "(i + 1) % accum_steps == 0 or i + 1 == len(loader)"]


@st.composite
def mutated_loops(draw):
    source = draw(st.sampled_from(LOOPS))
    for old in ("loss", "optimizer", "opt", "model", "i", "step"):
        if draw(st.booleans()):
            new = draw(st.sampled_from(["l", "objective", "o", "net", "idx", "n", "loss_value"]))
            source = re.sub(rf"\b{old}\b", new, source)
    source = source.replace("(i + 1) % accum_steps == 0", draw(st.sampled_from(GATES)))
    lines = source.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):  # comments and blank lines anywhere
        at = draw(st.integers(0, len(lines)))
        indent = re.match(r"\s*", lines[at] if at < len(lines) else "").group()
        lines.insert(at, draw(st.sampled_from(["\n", f"{indent}# note\n", "# top\n"])))
    source = "".join(lines)
    shape = draw(st.sampled_from(["module", "function", "method", "while"]))
    if shape == "while":
        source = re.sub(r"^for (.+) in (.+):$", r"it = iter(\2)\nwhile True:\n    \1 = next(it)",
                        source, count=1, flags=re.M)
    if shape in ("function", "method"):
        body = "".join("    " + line if line.strip() else line for line in source.splitlines(True))
        source = "def train(model, loader, accum_steps):\n" + body
        if shape == "method":
            source = "class Trainer:\n" + "".join(
                "    " + line if line.strip() else line for line in source.splitlines(True)
            ).replace("train(", "train(self, ")
    if draw(st.booleans()):
        source = source.replace("\n", "\r\n")
    return source


@FUZZ
@given(mutated_loops())
def test_mutated_training_loops(source):
    compile(source, "loop.py", "exec")  # the mutations themselves keep code valid
    _no_crash_and_fixes_compile(source)
