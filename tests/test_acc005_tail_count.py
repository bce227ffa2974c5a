"""ACC005's count of the batches left over at the end of an epoch follows where the gate's count
starts: `(i + 1) % k == 0` over `enumerate(loader)` leaves `len % k`; over `enumerate(loader, 1)`
the count is already 2 at the first batch, so the first window is one batch short and
`(len + 1) % k` are left over."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of

LOOP = """
def train(model, loader, optimizer, accum_iter):
    optimizer.zero_grad()
    for step, (x, y) in ENUMERATED:
        loss = (model(x) - y).pow(2).mean() / accum_iter
        loss.backward()
        if (step + 1) % accum_iter == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _message(enumerated: str) -> str:
    found = findings_of(textwrap.dedent(LOOP).replace("ENUMERATED", enumerated), "ACC005")
    assert len(found) == 1
    return found[0].message


def test_a_count_from_zero_leaves_len_mod_k() -> None:
    message = _message("enumerate(loader)")
    assert "the last len % accum_iter batches" in message and "(len +" not in message


def test_a_count_from_one_leaves_one_more() -> None:
    message = _message("enumerate(loader, 1)")
    assert "the last (len + 1) % accum_iter batches" in message and "the first window is 1 short" in message


EPOCHS = """
def train(model, loader, opt, epochs, k):
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            loss = (model(x) - y).pow(2).mean()
            ZEROING
            (loss / k).backward()
            if (i > 0 or k == 1) and i % k == 0:
                opt.step()
                opt.zero_grad()
"""


def _epochs_message(zeroing: str) -> str:
    found = findings_of(textwrap.dedent(EPOCHS).replace("ZEROING", zeroing), "ACC005")
    assert len(found) == 1
    return found[0].message


def test_a_gate_that_skips_batch_zero_unless_k_is_one() -> None:
    message = _epochs_message("if i == 0:\n                opt.zero_grad()")
    assert "batch 0 is left out, so the first window holds k + 1 batches" in message
    assert "the last (len - 1) % k batches" in message
    assert "zeroed at the next epoch's first batch" in message


def test_leftover_gradients_with_no_zeroing_reach_the_next_epoch() -> None:
    message = _epochs_message("pass")
    assert "added to the next epoch's first window" in message


def test_a_zeroing_in_the_first_epoch_only_does_not_wipe_the_leftover() -> None:
    message = _epochs_message("if epoch == 0 and i == 0:\n                opt.zero_grad()")
    assert "added to the next epoch's first window" in message


def test_another_setting_equal_to_one_does_not_leave_batch_zero_out() -> None:
    source = textwrap.dedent(EPOCHS).replace("ZEROING", "pass").replace("(i > 0 or k == 1)", "(i > 0 or epoch == 1)")
    found = findings_of(source, "ACC005")
    assert len(found) == 1 and "batch 0 is left out" not in found[0].message


def test_a_plain_count_started_at_two_leaves_one_more() -> None:
    source = textwrap.dedent(LOOP).replace("ENUMERATED", "enumerate(loader, 2)").replace("(step + 1) %", "step %")
    found = findings_of(source, "ACC005")
    assert len(found) == 1 and "the last (len + 1) % accum_iter batches" in found[0].message
