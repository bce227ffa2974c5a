"""A window counted by hand and kept in range instead of reset (`acc_step = (acc_step + 1) % k`, or
`acc_step += 1` then `acc_step %= k`, with the step under `if acc_step == 0:`), the count set to 0
before each pass over the data: the batches after the last full window never reach the step in
their epoch, as with `n += 1 ... n = 0`. ACC005. Twins: the count set once before all epochs
(windows run on across them), and an end-of-data clause."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

LOOP = """
def train(model, loader, optimizer, k, epochs):
    OUTER
    for epoch in range(epochs):
        INNER
        for i, (x, y) in enumerate(loader):
            loss = (model(x) - y).pow(2).mean() / k
            loss.backward()
            COUNT
            if TEST:
                optimizer.step()
                optimizer.zero_grad()
                RESET
"""

COUNTS = [
    "acc_step = (acc_step + 1) % k",
    "acc_step += 1\n            acc_step %= k",
    "acc_step += 1\n            acc_step = acc_step % k",
]


def _source(count: str, outer: str = "pass", inner: str = "acc_step = 0", test: str = "acc_step == 0") -> str:
    return LOOP.replace("OUTER", outer).replace("INNER", inner).replace("COUNT", count).replace("TEST", test).replace("RESET", "pass")


@pytest.mark.parametrize("count", COUNTS)
def test_a_count_restarted_each_epoch_drops_the_tail(count: str) -> None:
    source = _source(count)
    [finding] = findings_of(source, "ACC005")
    assert finding.location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "if acc_step == 0:" in line)
    assert "a count set to 0 before the loop" in finding.message
    assert "never reach `optimizer.step()` in their epoch" in finding.message


@pytest.mark.parametrize("count", COUNTS)
def test_a_count_set_once_before_all_epochs_runs_on(count: str) -> None:
    assert findings_of(_source(count, outer="acc_step = 0", inner="pass"), "ACC005") == []


@pytest.mark.parametrize("count", COUNTS)
def test_an_end_of_data_clause_steps_the_tail(count: str) -> None:
    assert findings_of(_source(count, test="acc_step == 0 or i + 1 == len(loader)"), "ACC005") == []


PLAIN_LOOP = LOOP.replace("for i, (x, y) in enumerate(loader):", "for x, y in loader:")

PLAIN_FORMS = [  # (count, test, reset): kept in range, and reset at the step
    ("acc_step = (acc_step + 1) % k", "acc_step == 0", "pass"),
    ("acc_step += 1", "acc_step == k", "acc_step = 0"),
]


@pytest.mark.parametrize("count, test, reset", PLAIN_FORMS)
def test_a_loop_over_the_data_without_a_count_of_its_own(count: str, test: str, reset: str) -> None:
    # `for x, y in loader:` gives no batch index: the window's own count, restarted each epoch, does
    source = PLAIN_LOOP.replace("COUNT", count).replace("TEST", test).replace("RESET", reset)
    restarted = source.replace("OUTER", "pass").replace("INNER", "acc_step = 0")
    [finding] = findings_of(restarted, "ACC005")
    assert finding.location.row == next(i for i, line in enumerate(restarted.splitlines(), 1) if f"if {test}:" in line)
    assert finding.fix is None  # no batch count to test the end of the data with
    once = source.replace("OUTER", "acc_step = 0").replace("INNER", "pass")
    assert findings_of(once, "ACC005") == []
