"""ACC007 where the zeroing does not run on every micro-step, or what the passes leave never reaches
the step:
- a step method called once per batch that zeroes only on the first call (`if self.task_iteration
  == 0: self.opt.zero_grad()`, the counter its own gate `self.task_iteration % k == 0` reads) runs
  that zeroing once, not every micro-step; an unconditional `zero_grad()` there is still reported;
- a loop of passes, each zeroing before its backward to store that pass's gradients (GEM's
  per-task gradients), followed by `zero_grad()` and a fresh backward before the step: the passes'
  gradients never reach the step, so the loop is no window of it; without that zeroing after the
  loop it is reported."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

OBSERVE = """
class Learner:
    def __init__(self, net, opt, loss, args):
        self.net, self.opt, self.loss, self.args = net, opt, loss, args
        self.task_iteration = 0

    def observe(self, inputs, labels):
        outputs = self.net(inputs)
        loss = self.loss(outputs, labels)
        ZEROING
        (loss / self.args.virtual_bs_iterations).backward()
        if self.task_iteration > 0 and self.task_iteration % self.args.virtual_bs_iterations == 0:
            self.opt.step()
            self.opt.zero_grad()
        return loss.item()

    def train(self, loader):
        for inputs, labels in loader:
            self.observe(inputs, labels)
            self.task_iteration += 1
"""


def _observe(zeroing: str) -> list:
    return findings_of(textwrap.dedent(OBSERVE).replace("ZEROING", zeroing), "ACC007")


@pytest.mark.parametrize("test", ["self.task_iteration == 0", "0 == self.task_iteration"])
def test_zeroing_on_the_first_call_only_is_clean(test: str) -> None:
    assert _observe(f"if {test}:\n            self.opt.zero_grad()") == []


def test_zeroing_on_every_call_is_reported() -> None:
    assert len(_observe("self.opt.zero_grad()")) == 1


def test_zeroing_under_another_counter_test_is_reported() -> None:
    # `self.other == 0` says nothing about how often the window's own counter is 0
    source = textwrap.dedent(OBSERVE).replace(
        "ZEROING", "if self.other == 0:\n            self.opt.zero_grad()"
    ).replace("self.task_iteration = 0", "self.task_iteration = 0\n        self.other = 0")
    assert len(findings_of(source, "ACC007")) == 1


GEM = """
def observe(model, opt, loss_fn, inputs, labels, buffer_tasks, grads, store_grad):
    for task, (buf_x, buf_y) in enumerate(buffer_tasks):
        opt.zero_grad()
        penalty = loss_fn(model(buf_x), buf_y)
        penalty.backward()
        store_grad(model.parameters, grads[task])
    AFTER
    loss = loss_fn(model(inputs), labels)
    loss.backward()
    opt.step()
"""


def test_passes_whose_gradients_are_wiped_before_the_step_are_clean() -> None:
    assert findings_of(textwrap.dedent(GEM).replace("AFTER", "opt.zero_grad()"), "ACC007") == []


def test_passes_whose_last_gradient_reaches_the_step_are_reported() -> None:
    found = findings_of(textwrap.dedent(GEM).replace("AFTER", "pass"), "ACC007")
    assert len(found) == 1 and "every pass of the loop" in found[0].message


@pytest.mark.parametrize(
    "zeroing",
    [
        "if self.task_iteration % 100 == 0:\n            self.opt.zero_grad()",
        "try:\n            outputs.sum()\n        except RuntimeError:\n            self.opt.zero_grad()",
    ],
)
def test_periodic_or_failure_zeroing_in_a_step_method_is_not_every_micro_step(zeroing: str) -> None:
    # the blocks of a method called once per batch are read like those of a loop's body
    assert _observe(zeroing) == []


@pytest.mark.parametrize(
    "after",
    ["other_opt.zero_grad()", "if labels.numel() > 1:\n        opt.zero_grad()", "opt.zero_grad()\n    opt.step()"],
)
def test_a_zeroing_that_does_not_wipe_the_passes_before_this_step_keeps_the_finding(after: str) -> None:
    # another optimizer's zeroing, a conditional one, or one with no fresh backward before the step
    source = textwrap.dedent(GEM).replace("AFTER", after).replace(
        "def observe(model, opt,", "def observe(model, opt, other_opt,"
    )
    if after.endswith("opt.step()"):
        source = source.replace("    loss = loss_fn(model(inputs), labels)\n    loss.backward()\n    opt.step()\n", "")
    found = findings_of(source, "ACC007")
    assert len(found) == 1 and "every pass of the loop" in found[0].message
