"""The seeds' own training loops, transcribed as test inputs.

Seeds 000 and 002 are one forum thread (an RNN decoder trained with AMP and gradient
accumulation): the question, two answers, and the asker's later version. Seed 001 is the linear
regression that shows accumulation giving the same result as a big batch.

The transcriptions keep the seeds' code; only what the forum formatting broke is repaired (the
question's `return` sat inside the batch loop and `step()` was indented under `process()`; the
asker's later `step()` uses `self`, so it is written as a method).
"""

from __future__ import annotations

import pytest

from accumlint.engine import fix_source
from tests.snippets import findings_of


def row_of(source: str, snippet: str, nth: int = 1) -> int:
    """1-based row of the nth line containing snippet."""
    seen = 0
    for row, line in enumerate(source.splitlines(), start=1):
        if snippet in line:
            seen += 1
            if seen == nth:
                return row
    raise AssertionError(f"{snippet!r} (#{nth}) not in source")


def findings(source: str, name: str) -> set[tuple[str, int]]:
    return {(f.code, f.location.row) for f in findings_of(source, path=name)}


# --- seeds 000/002: the question ------------------------------------------------------------

QUESTION = '''\
def train(epochs):
    """Main training loop. Loops for `epoch` number of epochs. Calls `process`."""
    for epoch in range(1, epochs + 1):
        train_loss = process("train")
        valid_loss = process("valid")
        # ... check whether we improved over earlier epochs
        if lr_scheduler:
            lr_scheduler.step(valid_loss)


def process(do):
    """Do a single epoch run through the dataloader of the training or validation set.
       Also takes care of optimizing the model after every `gradient_accumulation_steps` steps.
       Calls `step` for each batch where it gets the loss from."""
    if do == "train":
        model.train()
        torch.set_grad_enabled(True)
    else:
        model.eval()
        torch.set_grad_enabled(False)

    loss = 0.
    for batch_idx, batch in enumerate(dataloaders[do]):
        step_loss, avg_step_loss = step(batch)
        loss += avg_step_loss

        if do == "train":
            if amp:
                scaler.scale(step_loss).backward()

                if (batch_idx + 1) % gradient_accumulation_steps == 0:
                    # Unscales the gradients of optimizer's assigned params in-place
                    scaler.unscale_(optimizer)
                    # clip in-place
                    clip_grad_norm_(model.parameters(), 2.0)
                    scaler.step(optimizer)
                    scaler.update()
                    model.zero_grad()
            else:
                step_loss.backward()
                if (batch_idx + 1) % gradient_accumulation_steps == 0:
                    clip_grad_norm_(model.parameters(), 2.0)
                    optimizer.step()
                    model.zero_grad()

    # return average loss
    return loss / len(dataloaders[do])


def step(batch):
    """Processes one step (one batch) by forwarding multiple times to get a final prediction for a given sequence."""
    # do stuff... init hidden state and first input etc.
    loss = torch.tensor([0.]).to(device)

    for i in range(target_len):
        with torch.cuda.amp.autocast(enabled=amp):
            # overwrite previous decoder_hidden
            output, decoder_hidden = model(decoder_input, decoder_hidden)

            # compute loss between predicted classes (bs x classes) and correct classes for _this word_
            item_loss = criterion(output, target_tensor[i])

            # We calculate the gradients for the average step so that when
            # we do take an optimizer.step, it takes into account the mean step_loss
            # across batches. So basically (A+B+C)/3 = A/3 + B/3 + C/3
            loss += (item_loss / gradient_accumulation_steps)

        topv, topi = output.topk(1)
        decoder_input = topi.detach()

    return loss, loss.item() / target_len
'''


def test_question_reports_both_gates_without_end_of_data_clause():
    # Both gates are `(batch_idx + 1) % gradient_accumulation_steps == 0` over the finite
    # `enumerate(dataloaders[do])`, with no `or batch_idx + 1 == len(...)` and no flush after the
    # loop: the last len % k batches of every epoch never reach a step -> ACC005 on each `if`.
    #
    # Nothing else is wrong in the accumulation:
    # - ACC001: step() divides every item loss by gradient_accumulation_steps before summing, and
    #   the sum is what process() hands to backward, so the loss is scaled (in a helper).
    # - ACC002: step()'s tensor accumulator `loss` carries the graph on purpose: it is returned
    #   and backward-ed by the caller. process()'s own `loss += avg_step_loss` adds a float
    #   (`loss.item() / target_len`).
    # - ACC003: decoder_hidden is carried across the decoding loop, but backward runs after
    #   that loop (in the caller), which is full BPTT, not a freed graph.
    # - ACC004: the AMP branch unscales before clipping; the other branch has no scaler.
    # - ACC008: lr_scheduler.step(valid_loss) runs once per epoch in train().
    # The memory trouble the asker reports is the cost of full BPTT over target_len steps,
    # a design choice no rule should flag.
    gate = "if (batch_idx + 1) % gradient_accumulation_steps == 0:"
    assert findings(QUESTION, "seed000_question.py") == {
        ("ACC005", row_of(QUESTION, gate, 1)),
        ("ACC005", row_of(QUESTION, gate, 2)),
    }


def test_question_gate_fix_adds_end_of_data_clause():
    # The counter comes from enumerate over a sized iterable, so the fix is safe.
    result = fix_source(QUESTION, "seed000_question.py")
    assert result.error is None, result.error
    assert result.fixed_source is not None
    fixed_gate = (
        "if (batch_idx + 1) % gradient_accumulation_steps == 0"
        " or batch_idx + 1 == len(dataloaders[do]):"
    )
    assert result.fixed_source.count(fixed_gate) == 2
    assert result.findings == []


# --- seed 000: answer 1 (backward inside the decoding loop) -----------------------------------

ANSWER_1_STEP = '''\
def step():
    """Processes one step (one batch) by forwarding multiple times to get a final prediction for a given sequence."""
    # You should not accumulate loss on `GPU`, RAM and CPU is better for that
    # Use GPU only for calculations, not for gathering metrics etc.
    loss = 0

    for i in range(target_len):
        with torch.cuda.amp.autocast(enabled=amp):
            # where decoder_input is from?
            # I assume there is one in real code
            output, decoder_hidden = model(decoder_input, decoder_hidden)
            # Here you divide by accumulation steps
            item_loss = criterion(output, target_tensor[i]) / (
                gradient_accumulation_steps * target_len
            )


        scaler.scale(item_loss).backward()
        loss += item_loss.detach().item()

        # Not sure what was topv for here
        _, topi = output.topk(1)
        decoder_input = topi.detach()

    # No need to return loss now as we did backward above
    return loss / target_len
'''

ANSWER_PROCESS = '''\
def process(do):
    loss = 0.0
    for batch_idx, batch in enumerate(dataloaders[do]):
        # Here everything is detached from graph so we're safe
        avg_step_loss = step(batch)
        loss += avg_step_loss

        if do == "train":
            if (batch_idx + 1) % gradient_accumulation_steps == 0:
                # You can use unscale as in the example in PyTorch's docs
                # just like you did
                scaler.unscale_(optimizer)
                # clip in-place
                clip_grad_norm_(model.parameters(), 2.0)
                scaler.step(optimizer)
                scaler.update()
                # IMO in this case optimizer.zero_grad is more readable
                # but it's a nitpicking
                optimizer.zero_grad()

    # return average loss
    return loss / len(dataloaders[do])


'''

CARRY = "output, decoder_hidden = model(decoder_input, decoder_hidden)"


def test_answer_1_step_carries_decoder_hidden_through_backward():
    # Backward now runs once per decoded token, inside `for i in range(target_len)`, while
    # decoder_hidden produced by iteration i is fed to the model in iteration i + 1 without a
    # detach: the second backward walks into the graph the first one freed. Seed 002's
    # follow-up hit exactly "Trying to backward through the graph a second time" here.
    # decoder_input is fine: it comes from topk indices and is detached anyway.
    # The loss is divided by gradient_accumulation_steps * target_len (names k) and logged via
    # .detach().item(), so no ACC001/ACC002.
    assert findings(ANSWER_1_STEP, "seed000_answer1.py") == {
        ("ACC003", row_of(ANSWER_1_STEP, CARRY)),
    }


def test_answer_1_with_answer_process():
    # The answer's process() keeps the question's gate, so the dropped partial window stays
    # (ACC005 on the gate); the per-token backward lives in step(), which still carries
    # decoder_hidden (ACC003). avg_step_loss is a float built from .item() values.
    source = ANSWER_PROCESS + ANSWER_1_STEP
    assert findings(source, "seed000_answer1_full.py") == {
        ("ACC005", row_of(source, "if (batch_idx + 1) % gradient_accumulation_steps == 0:")),
        ("ACC003", row_of(source, CARRY)),
    }


def test_answer_1_fix_detaches_after_backward():
    # The fix puts the detach right after that iteration's backward; decoder_hidden comes out of
    # a model call, so its structure (tensor or LSTM tuple) is not visible: allow unsafe fixes.
    result = fix_source(ANSWER_1_STEP, "seed000_answer1.py", unsafe_fixes=True)
    assert result.error is None, result.error
    assert result.fixed_source is not None
    lines = result.fixed_source.splitlines()
    backward = lines.index("        scaler.scale(item_loss).backward()")
    assert lines[backward + 1] == "        decoder_hidden = decoder_hidden.detach()"
    assert result.findings == []


# --- seed 000: answer 2 (full BPTT) ---------------------------------------------------------

ANSWER_2_STEP = '''\
def step():
    """Processes one step (one batch) by forwarding multiple times to get a final prediction for a given sequence."""
    loss = 0

    for i in range(target_len):
        with torch.cuda.amp.autocast(enabled=amp):
            output, decoder_hidden = model(decoder_input, decoder_hidden)
            item_loss = criterion(output, target_tensor[i]) / (
                gradient_accumulation_steps * target_len
            )

        _, topi = output.topk(1)
        decoder_input = topi

        loss += item_loss
    scaler.scale(loss).backward()
    return loss.detach().cpu() / target_len
'''


def test_answer_2_full_bptt_is_clean():
    # One backward after the decoding loop: keeping every step's graph until then is the point
    # (full BPTT). decoder_input comes from topk indices, which carry no graph, so leaving out
    # .detach() is harmless. The accumulator `loss` is the tensor that is backward-ed, and the
    # returned value is detached.
    assert findings(ANSWER_2_STEP, "seed000_answer2.py") == set()


# --- seed 002: the asker's later version ----------------------------------------------------

ASKER_LATER = '''\
class Trainer:
    def step(self):
        """Processes one step (one batch) by forwarding multiple times to get a final prediction for a given sequence."""
        # do stuff... init hidden state and first input etc.
        loss = 0.

        for i in range(target_len):
            with torch.cuda.amp.autocast(enabled=amp):
                # overwrite previous decoder_hidden
                output, decoder_hidden = model(decoder_input, decoder_hidden)
                # Not sure why I need to detach here
                decoder_hidden = decoder_hidden.detach()

                step_loss = self.criterion(output, target_tensor[i]) / (self.gradient_accumulation_steps * target_len)

                loss += step_loss.item()

            if do == "train":
                if self.amp:
                    # for ANP see https://pytorch.org/docs/stable/notes/amp_examples.html
                    self.scaler.scale(step_loss).backward()
                else:
                    step_loss.backward()

            topv, topi = output.topk(1)
            decoder_input = topi.detach()

        return loss.item() / target_len
'''


def test_asker_later_version_is_clean():
    # decoder_hidden is detached before the next iteration reads it (right after the forward,
    # which is as good as after the backward); the logged loss is a float from .item(); the
    # per-token loss is divided by gradient_accumulation_steps * target_len.
    assert findings(ASKER_LATER, "seed002_later.py") == set()


# --- seed 001: linear regression ------------------------------------------------------------

SEED001_SETUP = '''\
import torch
import numpy as np
import torch.utils.data as Data
import torch.nn as nn
import torch.optim as optim

num_inputs = 2
num_examples = 1000
true_w = torch.Tensor([-2, 3.4]).view(2, 1)
true_b = 4.2
features = torch.randn(num_examples, num_inputs, dtype=torch.float32)
labels = torch.mm(features, true_w) + true_b
labels += torch.tensor(np.random.normal(0, 0.01, size=labels.size()), dtype=torch.float32)
dataset = Data.TensorDataset(features, labels)
'''

SEED001_ACCUM = SEED001_SETUP + '''\
batch_size = 10
accum_iter = 4
data_iter = Data.DataLoader(dataset, batch_size, shuffle=False)
net = nn.Sequential(nn.Linear(num_inputs, 1))
nn.init.normal_(net[0].weight, mean=0, std=0)
nn.init.constant_(net[0].bias, val=0)
criterion = nn.MSELoss()
optimizer = optim.SGD(net.parameters(), lr=0.01)
num_epochs = 3
for epoch in range(1, num_epochs + 1):
    epoch_loss = []
    for batch_idx, (X, y) in enumerate(data_iter):
        output = net(X)
        loss = criterion(output, y.view(-1, 1))
        loss = loss / accum_iter
        loss.backward()
        if ((batch_idx + 1) % accum_iter == 0) or (batch_idx + 1 == len(data_iter)):
            optimizer.step()
            optimizer.zero_grad()
        epoch_loss.append(loss.item() / batch_size)
    print(f'epoch {epoch}, loss: {np.mean(epoch_loss)}')
'''

SEED001_PLAIN = SEED001_SETUP + '''\
batch_size = 40
data_iter = Data.DataLoader(dataset, batch_size, shuffle=False)
net = nn.Sequential(nn.Linear(num_inputs, 1))
nn.init.normal_(net[0].weight, mean=0, std=0)
nn.init.constant_(net[0].bias, val=0)
criterion = nn.MSELoss()
optimizer = optim.SGD(net.parameters(), lr=0.01)
num_epochs = 3
for epoch in range(1, num_epochs + 1):
    epoch_loss = []
    for X, y in data_iter:
        output = net(X)
        loss = criterion(output, y.view(-1, 1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss.append(loss.item() / batch_size)
    print(f'epoch {epoch}, loss: {np.mean(epoch_loss)}')
'''

# The article's pseudo-code, before the regression example.
SEED001_PSEUDO_PLAIN = '''\
for inputs, labels in data_loader:
    preds = model(inputs)
    loss = criterion(preds, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''

SEED001_PSEUDO_ACCUM = '''\
accum_iter = 4
for batch_idx, (inputs, labels) in enumerate(data_loader):
    preds = model(inputs)
    loss = criterion(preds, labels)
    loss = loss / accum_iter
    loss.backward()
    if ((batch_idx + 1) % accum_iter == 0) or (batch_idx + 1 == len(data_loader)):
        optimizer.step()
        optimizer.zero_grad()
'''


@pytest.mark.parametrize(
    "name, source",
    [
        # k = 4: divided once, stepped on the gate or on the last batch, zeroed after the step,
        # logged through .item(). The reference loop of the whole project.
        ("seed001_accum.py", SEED001_ACCUM),
        # No accumulation: zero_grad before every backward is right when every batch steps.
        ("seed001_plain.py", SEED001_PLAIN),
        ("seed001_pseudo_plain.py", SEED001_PSEUDO_PLAIN),
        ("seed001_pseudo_accum.py", SEED001_PSEUDO_ACCUM),
    ],
)
def test_seed001_loops_are_clean(name, source):
    assert findings(source, name) == set()
