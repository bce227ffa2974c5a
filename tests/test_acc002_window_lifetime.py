"""ACC002 stays silent on a total that lives one accumulation window (DESIGN: "a total reset every
iteration or every window cannot grow"): the micro-step loop is the window (its backward inside, the
optimizer step after it, none in it), and the total starts anew before each run of it, in the
enclosing loop or on each call of the function. It stays silent, too, on a list the code takes
items back out of (a pipeline schedule's queue of tensors awaiting their backward). The twins keep
the total across windows and are reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.snippets import findings, row

SCRIPT = """
import torch


def train(model, opt, loader, k, steps):
    it = iter(loader)
    {outer_start}
    for step in range(steps):
        {inner_start}
        for micro in range(k):
            x, y = next(it)
            loss = torch.nn.functional.mse_loss(model(x), y) / k
            loss.backward()
            total += loss
        opt.step()
        opt.zero_grad()
        print(total.item())
"""

TRAINER = """
import torch


class Trainer:
    def train_step(self):
        {start}
        self.opt.zero_grad()
        for i in range(self.k):
            x, y = next(self.loader)
            loss = self.model(x, y) / self.k
            loss.backward()
            {store}
        self.opt.step()
        {after}
"""

QUEUE = """
import torch


def schedule(model, batches, optimizer):
    waiting = []

    def backward_first():
        first = {take}
        first.sum().backward()

    for batch in batches:
        out = model(batch)
        out.sum().backward()
        waiting.append(out * 2)
        if len(waiting) > 2:
            backward_first()
            optimizer.step()
            optimizer.zero_grad()
"""




def test_a_total_started_anew_before_each_window_is_clean():
    source = SCRIPT.format(outer_start="", inner_start="total = torch.zeros([])")
    assert findings(source) == []


def test_a_total_started_once_before_all_windows_is_reported():
    source = SCRIPT.format(outer_start="total = torch.zeros([])", inner_start="")
    assert findings(source) == [("ACC002", row(source, "total += loss"))]


def test_a_total_local_to_a_step_method_that_runs_one_window_is_clean():
    source = TRAINER.format(start="total = torch.zeros([])", store="total += loss", after="self.last = total.item()")
    assert findings(source) == []


def test_a_total_kept_on_the_object_across_calls_is_still_reported():
    source = TRAINER.format(start="", store="self.history.append(loss)", after="")
    assert ("ACC002", row(source, "self.history.append(loss)")) in findings(source)


def test_a_window_function_in_another_module_is_clean(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    step = TRAINER.format(start="total = torch.zeros([])", store="total += loss", after="del total")
    (tmp_path / "steps.py").write_text(textwrap.dedent(step).lstrip())
    main = """
    from steps import Trainer

    def main(trainer, steps):
        for _ in range(steps):
            trainer.train_step()
    """
    (tmp_path / "main.py").write_text(textwrap.dedent(main).lstrip())
    monkeypatch.chdir(tmp_path)
    for name in ("steps.py", "main.py"):
        assert findings((tmp_path / name).read_text(), name) == []


def test_a_queue_popped_in_a_nested_function_is_clean():
    assert findings(QUEUE.format(take="waiting.pop(0)")) == []


def test_a_list_nothing_takes_from_is_still_reported():
    source = QUEUE.format(take="waiting[0]")
    assert findings(source) == [("ACC002", row(source, "waiting.append(out * 2)"))]


PER_HEAD = """
import torch


def train(heads, optimizers, loader, features):
    {run_start}
    for inputs, target in loader:
        {batch_start}
        output = features(inputs)
        for head, optimizer in zip(heads, optimizers):
            loss = torch.nn.functional.cross_entropy(head(output), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss)
        print([l.item() for l in losses])
"""


def test_a_list_started_anew_for_each_batch_in_a_loop_over_heads_is_clean():
    assert findings(PER_HEAD.format(run_start="", batch_start="losses = []")) == []


def test_the_same_list_kept_across_batches_is_reported():
    source = PER_HEAD.format(run_start="losses = []", batch_start="")
    assert findings(source) == [("ACC002", row(source, "losses.append(loss)"))]


PIPELINE = """
import torch


def train_step(model, loader, micro_batches, send, receive):
    outputs = []
    for _ in range(micro_batches):
        batch = next(loader)
        output = model(batch)
        send(output)
        outputs.append(output)
    for i in range(micro_batches):
        output = {take}
        model.backward(output, receive())
"""


def test_forward_passes_queued_for_the_backward_passes_that_follow_are_clean():
    assert findings(PIPELINE.format(take="outputs.pop(0)")) == []


def test_forward_outputs_kept_and_never_taken_out_are_reported():
    source = PIPELINE.format(take="outputs[i]")
    assert findings(source) == [("ACC002", row(source, "outputs.append(output)"))]
