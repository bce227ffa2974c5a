"""ACC005's account of the unstepped batches when the zeroing sits under a hand-kept window
counter (`if batch_idx == 0: optimizer.zero_grad()`, the counter set to 0 right before each pass
over the data and again at each step): at the next epoch's first batch the counter is 0 again, so
their gradients are zeroed there, not added to the next window. Twin: the counter set to 0 once,
before the epoch loop, keeps counting across epochs; the leftover then joins the next epoch's
first window."""

from __future__ import annotations

from accumlint.engine import check_source

SCRIPT = """
def train(net, loader, optimizer, k, epochs):
    RESET_ONCE
    for epoch in range(epochs):
        RESET_EACH_PASS
        for batch in loader:
            if batch_idx == 0:
                optimizer.zero_grad()
            loss = net(batch).mean() / k
            loss.backward()
            batch_idx += 1
            if batch_idx == k:
                optimizer.step()
                batch_idx = 0
"""


def _acc005(once: str, each: str) -> list:
    source = SCRIPT.replace("RESET_ONCE", once).replace("RESET_EACH_PASS", each)
    return [f for f in check_source(source.encode(), "train.py").findings if f.code == "ACC005"]


def test_a_counter_reset_before_each_pass_wipes_the_leftover_at_the_first_batch() -> None:
    [finding] = _acc005("pass", "batch_idx = 0")
    assert "their gradients are zeroed at the next epoch's first batch" in finding.message


def test_a_counter_kept_across_epochs_carries_the_leftover_into_the_next_window() -> None:
    found = _acc005("batch_idx = 0", "pass")
    assert all("zeroed at the next epoch's first batch" not in f.message for f in found)
