"""A loop written for both k == 1 and k > 1: `if k == 1: zero_grad()` at the top, and
`if k > 1: if (i + 1) % k == 0: step()` / `else: step()`. The ungated step and the zeroing run
only where k is 1, so the window is read from the gated branch: a missing end-of-epoch clause
is ACC005 and the k == 1 zeroing is no ACC007. Script and trainer-class forms; the twins have the
end clause (clean), or step ungated under another setting: a mode chosen once in the script, read
like the k test; a `self.` setting in the trainer, which may move between calls: nothing is said."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings, row

BODY = """
for idx, batch in enumerate(loader):
    loss = model(batch) / K
    if K == 1:
        optimizer.zero_grad()
    loss.backward()
    {outer}
        if (idx + 1) % K == 0{tail}:
            optimizer.step()
            optimizer.zero_grad()
    else:
        optimizer.step()
"""
KNOWN_K = "if K > 1:"
UNRELATED = "if use_window:"
TAIL = " or idx + 1 == len(loader)"


def _script(outer: str, tail: str = "") -> str:
    body = BODY.replace("{outer}", outer).replace("{tail}", tail)
    return "def train(model, optimizer, loader, K, use_window):\n" + textwrap.indent(body.strip(), "    ") + "\n"


def _trainer(outer: str, tail: str = "") -> str:
    body = BODY.replace("{outer}", outer).replace("{tail}", tail)
    for name in ("model", "optimizer", "K", "use_window"):
        body = body.replace(f"{name}(", f"self.{name}(").replace(f"{name}.", f"self.{name}.")
        body = body.replace(f" {name} ", f" self.{name} ").replace(f"/ {name}", f"/ self.{name}").replace(f"% {name}", f"% self.{name}")
        body = body.replace(f"if {name}", f"if self.{name}")
    return (
        "class Trainer:\n    def __init__(self, model, optimizer, K, use_window):\n"
        "        self.model, self.optimizer, self.K, self.use_window = model, optimizer, K, use_window\n\n"
        "    def train(self, loader):\n" + textwrap.indent(body.strip(), "        ") + "\n"
    )


def _codes(source: str) -> list[tuple[str, int]]:
    return [f for f in findings(source) if f[0] in {"ACC005", "ACC007"}]


@pytest.mark.parametrize("build", [_script, _trainer], ids=["script", "trainer"])
def test_the_window_of_the_k_above_one_branch_is_read(build):
    source = build(KNOWN_K)
    assert _codes(source) == [("ACC005", row(source, "% "))]


@pytest.mark.parametrize("build", [_script, _trainer], ids=["script", "trainer"])
def test_with_the_end_clause_it_is_clean(build):
    assert _codes(build(KNOWN_K, TAIL)) == []


def test_a_step_every_iteration_on_another_setting_is_another_mode():
    # `if use_window:` never changes in the loop: a run takes one branch, and the window of the
    # accumulating one is read (tests/test_windows_mode_switch.py).
    source = _script(UNRELATED)
    assert _codes(source) == [("ACC005", row(source, "% "))]


def test_a_self_setting_may_move_between_calls_and_is_no_mode():
    assert _codes(_trainer(UNRELATED)) == []
