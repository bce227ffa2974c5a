"""ACC005 on a loop that walks a buffer in minibatches each epoch, `for i, start in
enumerate(range(0, n, mb))`: like a loader, its length need not be a multiple of k, so the last
micro-batches of each epoch miss the step. The whole run counted by `enumerate(range(total))`
(no epoch around it) and a range over a multiple of k stay silent. Script and trainer-class forms."""

from __future__ import annotations

import pytest

from tests.snippets import findings, row

SCRIPT = """
def train(agent, optimizer, buffer, args):
    {outer}
        for i, start in enumerate({walk}):
            loss = agent.loss(buffer, start) / args.accum
            loss.backward()
            if (i + 1) % args.accum == 0:
                optimizer.step()
                optimizer.zero_grad()
"""

TRAINER = """
class Trainer:
    def __init__(self, agent, optimizer, args):
        self.agent, self.optimizer, self.args = agent, optimizer, args

    def train(self, buffer):
        {outer}
            for i, start in enumerate({walk}):
                loss = self.agent.loss(buffer, start) / self.args.accum
                loss.backward()
                if (i + 1) % self.args.accum == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""

EPOCHS = "for epoch in range(args.epochs):"
WALK = "range(0, len(buffer), args.minibatch)"


def _source(template: str, outer: str, walk: str) -> str:
    if template is TRAINER:
        outer, walk = outer.replace("args.", "self.args."), walk.replace("args.", "self.args.")
    return template.replace("{outer}", outer).replace("{walk}", walk)


def _acc005(source: str) -> list[tuple[str, int]]:
    return [f for f in findings(source) if f[0] == "ACC005"]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_buffer_walked_every_epoch_drops_its_tail(template):
    source = _source(template, EPOCHS, WALK)
    assert _acc005(source) == [("ACC005", row(source, "% "))]


@pytest.mark.parametrize("template", [SCRIPT, TRAINER], ids=["script", "trainer"])
def test_a_range_over_a_multiple_of_k_is_clean(template):
    assert _acc005(_source(template, EPOCHS, "range(args.updates * args.accum)")) == []


WHOLE_RUN = """
def train(agent, optimizer, buffer, args):
    for i, _ in enumerate(range(args.total_steps)):
        loss = agent.loss(buffer, i) / args.accum
        loss.backward()
        if (i + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_the_whole_run_counted_by_one_range_is_clean():
    assert _acc005(WHOLE_RUN) == []


COUNTED_WALK = """
def train(model, optimizer, pieces, args):
    for piece in pieces:
        samples = load(piece)
        for step in range({count}):
            batch = samples[step * args.batch_size: (step + 1) * args.batch_size]
            loss = model(batch) / args.accum
            loss.backward()
            if (step + 1) % args.accum == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def test_a_walk_counted_in_minibatches_of_the_data_drops_its_tail():
    """`for step in range(len(samples) // batch_size)`, each piece: as many micro-steps as the data
    has minibatches, not a multiple of k."""
    source = COUNTED_WALK.format(count="len(samples) // args.batch_size")
    assert _acc005(source) == [("ACC005", row(source, "% "))]


@pytest.mark.parametrize("count", ["args.updates * args.accum", "len(samples) // args.accum"])
def test_a_walk_counted_in_windows_is_clean(count):
    assert _acc005(COUNTED_WALK.format(count=count)) == []


def test_the_same_walk_as_the_whole_run_is_clean():
    source = COUNTED_WALK.format(count="len(samples) // args.batch_size").replace(
        "    for piece in pieces:\n        samples = load(piece)\n        for step", "    samples = load(pieces)\n    for step")
    assert "for piece" not in source
    assert _acc005(source) == []
