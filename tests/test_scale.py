"""Scale: a 200,000-line file with a training loop at its end is analysed, not refused.

No timing is asserted here (benchmarks/bench_check.py prints the figures, on realistic code). The
filler is very short statements, mostly `pass`, so that the test stays quick on two cores while
the analysis still walks 200,000 statements, 10,000 functions and a module scope with 10,000
definitions."""

from __future__ import annotations

from accumlint.engine import check_source
from tests.snippets import findings_of

# A known bug: the loss reaches backward undivided while the step is gated on accum_steps.
LOOP = '''
def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
'''
BACKWARD_ROW = LOOP.splitlines().index("        loss.backward()") + 1  # 1-based, in LOOP


def filler(lines: int) -> str:
    """`lines` lines of short statements: functions of twenty lines (mostly `pass`) each called
    once at module level."""
    block = "def f{n}(x):\n    y = x + {n}\n" + "    pass\n" * 16 + "    return y\nv{n} = f{n}({n})\n"
    return "".join(block.format(n=n) for n in range(lines // 20))


def test_loop_alone_gives_one_acc001():
    result = check_source(LOOP, "train.py")
    assert result.error is None
    assert [(f.code, f.location.row) for f in result.findings] == [("ACC001", BACKWARD_ROW)]


def test_200k_line_file_is_analysed_and_the_finding_is_at_the_right_line():
    head = filler(200_000)
    assert head.count("\n") == 200_000
    found = findings_of(head + LOOP, path="big.py")
    assert [(f.code, f.location.row) for f in found] == [("ACC001", 200_000 + BACKWARD_ROW)]
