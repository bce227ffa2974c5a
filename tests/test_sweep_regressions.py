"""False alarms and wrong fixes found by sweeping public training code, each in its general shape
(written here from scratch, not copied)."""

from __future__ import annotations

import textwrap

from accumlint import engine


def check(source: str):
    result = engine.check_source(textwrap.dedent(source), "t.py")
    assert result.error is None, result.error
    return result.findings


def codes(source: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in check(source)}


# A trainer that divides by hand unless an engine divides, and rebinds `loss` to the engine's
# backward in the branch that excludes the plain backward.
GUARDED = """
class Trainer:
    def training_step(self, batch):
        loss = self.model(batch)
        if self.accum > 1 and not self.engine:
            loss = loss / self.accum
        if self.engine:
            loss = self.engine.backward(loss)
        else:
            loss.backward()
        return loss.detach()

    def train(self, loader):
        for step, batch in enumerate(loader):
            self.training_step(batch)
            if (step + 1) % self.accum == 0 or step + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_a_definition_on_another_branch_never_reaches_the_backward():
    # Neither "never divided" (the division reaches the plain backward) nor "divided twice"
    # (the division is kept from the engine by the same test).
    assert codes(GUARDED) == set()


def test_without_the_hand_division_the_plain_backward_is_still_reported():
    source = GUARDED.replace("        if self.accum > 1 and not self.engine:\n            loss = loss / self.accum\n", "")
    assert ("ACC001", 8) in codes(source)


OPTIMIZER_BACKWARD = """
def train(args, model, optimizer, loader):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y){divide}
        optimizer.backward(loss)
        if (step + 1) % args.accum == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_loss_scaling_optimizers_backward_differentiates_its_argument():
    assert codes(OPTIMIZER_BACKWARD.format(divide=" / args.accum")) == set()
    source = textwrap.dedent(OPTIMIZER_BACKWARD.format(divide=""))
    assert codes(source) == {("ACC001", 5)}
    fixed = engine.fix_source(source, "t.py").fixed_source
    assert "optimizer.backward(loss / args.accum)" in fixed  # never `(optimizer / k).backward(...)`


def test_an_object_built_as_a_scheduler_has_no_tensor_backward():
    source = """
    sched = torch.optim.lr_scheduler.LambdaLR(opt, f)
    for i, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        sched.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
    """
    assert {code for code, _ in codes(source)} == {"ACC001"}
    assert all(f.location.row == 5 for f in check(source))
