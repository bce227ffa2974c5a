"""A window counted by hand: `n = 0` before the pass over the data, `n += 1` every micro-step,
`if n == k: step; n = 0`. The count starts afresh with each pass, so the batches after the last
full window never reach the step in their epoch: ACC005. Twins: the count set to 0 once before all
epochs (it carries across them: windows run on, nothing is dropped), and a test with an end-of-data
clause. Forms: an epoch function called per epoch, a trainer method with its own epoch loop."""

from __future__ import annotations

from tests.snippets import findings_of

EPOCH_FUNCTION = """
def train_one_epoch(model, optimizer, train_loader, cfg):
    num_iter = 0
    for idx, data in enumerate(train_loader):
        num_iter += 1
        loss = model(data) / cfg.step_per_update
        loss.backward()
        if TEST:
            optimizer.step()
            optimizer.zero_grad()
            num_iter = 0
"""

TRAINER = """
class Trainer:
    def fit(self):
        OUTER
        for epoch in range(self.epochs):
            INNER
            for i, batch in enumerate(self.loader):
                count += 1
                (self.model(batch) / self.accum).backward()
                if count >= self.accum:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    count = 0
"""


def _acc005(source: str) -> list:
    return findings_of(source, "ACC005", path="train.py", dedent=True)


def test_count_restarted_per_epoch_function_is_reported() -> None:
    [finding] = _acc005(EPOCH_FUNCTION.replace("TEST", "num_iter == cfg.step_per_update"))
    assert "a count set to 0 before the loop" in finding.message


def test_fixed_test_is_clean() -> None:
    fixed = EPOCH_FUNCTION.replace("TEST", "num_iter == cfg.step_per_update or idx + 1 == len(train_loader)")
    assert _acc005(fixed) == []


def test_count_started_inside_the_epoch_loop_is_reported() -> None:
    source = TRAINER.replace("OUTER", "pass").replace("INNER", "count = 0")
    assert len(_acc005(source)) == 1


def test_count_started_once_before_all_epochs_is_clean() -> None:
    source = TRAINER.replace("OUTER", "count = 0").replace("INNER", "pass")
    assert _acc005(source) == []
