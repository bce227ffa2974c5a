"""`if i > 0 and i % k == 0:` with `i` counted from 0 leaves batch 0 out of the gate: the first
window holds k + 1 batches (not one), and the last (len - 1) % k batches of each epoch miss the step.
The message says which; the plain `i % k == 0` keeps the one-batch wording."""

from __future__ import annotations

from tests.snippets import findings_of

LOOP = """
def train(model, optimizer, loader, k):
    for i, batch in enumerate(loader):
        loss = model(batch) / k
        loss.backward()
        if TEST:
            optimizer.step()
            optimizer.zero_grad()
"""


def _acc005(test: str) -> list[str]:
    return [v.message for v in findings_of(LOOP.replace("TEST", test), "ACC005", path="train.py", dedent=True)]


def test_guard_against_batch_zero_makes_a_longer_first_window() -> None:
    for test in ("i > 0 and i % k == 0", "i != 0 and i % k == 0", "i and i % k == 0", "i >= 1 and i % k == 0"):
        [message] = _acc005(test)
        assert "first window holds k + 1 batches" in message, test
        assert "(len - 1) % k" in message


def test_plain_modulo_keeps_the_one_batch_window() -> None:
    [message] = _acc005("i % k == 0")
    assert "one-batch first window" in message
