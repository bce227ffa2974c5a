"""ACC002 and the outputs of a fixed number of refinement passes over one batch, each pass with its
own backward, kept in a container the function starts anew on every call and returns
(`y_hats = {...}` then `for it in range(self.opts.n_iters_per_batch): ...; loss.backward();
y_hats[idx].append(y_hat[idx])`), with the optimizer step in the caller after the call and the
caller binding what it returns afresh every batch: the container holds one batch's passes and
cannot grow across the run, so no finding. Twins that still report: the same loop over the data
loader or another collection, and a caller that keeps every batch's container."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

COACH = """
import torch


class Coach:
    def __init__(self, net, optimizer, loader, opts):
        self.net, self.optimizer, self.loader, self.opts = net, optimizer, loader, opts

    def train_on_batch(self, x, y):
        y_hats = {idx: [] for idx in range(x.shape[0])}
        y_hat = None
        for it in PASSES:
            x_input = x if y_hat is None else torch.cat([x, y_hat.detach()], dim=1)
            y_hat = self.net(x_input)
            loss = (y_hat - y).pow(2).mean()
            loss.backward()
            for idx in range(x.shape[0]):
                y_hats[idx].append(y_hat[idx])
        return y_hats, loss.item()

    def train(self):
        KEEP
        for x, y in self.loader:
            self.optimizer.zero_grad()
            y_hats, loss_value = self.train_on_batch(x, y)
            self.optimizer.step()
            STORE
            self.log_images(x, y, y_hats)

    def log_images(self, x, y, y_hats):
        print(len(y_hats))
"""


def _source(passes: str = "range(self.opts.n_iters_per_batch)", keep: str = "pass", store: str = "pass") -> str:
    return textwrap.dedent(COACH).replace("PASSES", passes).replace("KEEP", keep).replace("STORE", store)


def test_one_batch_of_refinement_outputs_returned_to_a_fresh_binding_is_clean() -> None:
    assert findings_of(_source(), "ACC002") == []
    # what the caller does with the other returned values does not matter
    assert findings_of(_source(keep="running = 0.0", store="running = running + loss_value"), "ACC002") == []


def test_a_caller_that_returns_the_container_is_reported() -> None:
    found = findings_of(_source(store="return y_hats"), "ACC002")
    assert len(found) == 1 and "y_hats" in found[0].message


@pytest.mark.parametrize(
    "passes", ["self.loader", "range(len(self.opts.schedule))", "self.opts.schedule", "range(x.shape[0])", "range(x.size(0))"]
)
def test_the_same_store_in_a_walk_over_a_collection_is_reported(passes: str) -> None:
    found = findings_of(_source(passes=passes), "ACC002")
    assert len(found) == 1 and "y_hats" in found[0].message


def test_a_caller_that_keeps_every_batch_container_is_reported() -> None:
    found = findings_of(_source(keep="history = []", store="history.append(y_hats)"), "ACC002")
    assert len(found) == 1 and "y_hats" in found[0].message


def test_a_caller_handing_it_to_a_method_that_keeps_it_is_reported() -> None:
    source = _source(store="self.remember(y_hats)") + textwrap.dedent("""
        def remember(self, y_hats):
            self.history.append(y_hats)
    """).replace("\n", "\n    ")
    found = findings_of(source, "ACC002")
    assert any("y_hats" in f.message for f in found)


def test_a_call_through_another_object_is_not_known_to_bind_afresh() -> None:
    source = _source() + textwrap.dedent("""

        def run(coach, x, y):
            y_hats, loss_value = coach.train_on_batch(x, y)
            print(len(y_hats), loss_value)
    """)
    assert any("y_hats" in f.message for f in findings_of(source, "ACC002"))
