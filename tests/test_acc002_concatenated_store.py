"""ACC002 where the store is a tensor rebuilt by concatenation (`preds = torch.cat((preds, out))`,
`torch.cat([preds, out], dim=0)`, `torch.vstack`), as evaluation loops gather predictions: it
keeps every batch's graph like `preds.append(out)` does. A store that starts as None and takes
the first batch whole (`if preds is None: preds = out`, or the same as a conditional expression)
is not started anew by that first assignment.
Twins: the loop under `torch.no_grad()`, detached or numpy parts, and a store that is reset every
iteration. Forms: an evaluation loop, a training loop's per-epoch store."""

from __future__ import annotations

import pytest

from tests.snippets import findings_of

EVALUATION = """
import torch


def evaluate(model, loader):
    model.eval()
    predict = INITIAL
    for x, y in loader:
        output = model(x)
        KEEP
    return predict.detach().cpu().numpy()
"""

TRAINING = """
import torch


def train(model, loader, optimizer, criterion):
    all_logits = torch.zeros(0)
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        all_logits = torch.cat([all_logits, KEPT], dim=0)
    print(all_logits.shape)
"""

FIRST_THEN_CAT = """if predict is None:
            predict = output
        else:
            predict = torch.cat((predict, output))"""


def _evaluation(keep: str, initial: str = "None") -> str:
    return EVALUATION.replace("KEEP", keep).replace("INITIAL", initial)


@pytest.mark.parametrize(
    "keep, initial",
    [
        ("predict = torch.cat((predict, output))", "torch.zeros(0)"),
        ("predict = torch.cat([predict, output], dim=0)", "torch.zeros(0)"),
        ("predict = torch.vstack((predict, output))", "torch.zeros(0, 4)"),
        (FIRST_THEN_CAT, "None"),
        ("predict = output if predict is None else torch.cat((predict, output))", "None"),
    ],
)
def test_an_evaluation_loop_that_concatenates_its_outputs(keep: str, initial: str) -> None:
    source = _evaluation(keep, initial)
    [finding] = findings_of(source, "ACC002")
    assert "`predict` keeps the autograd graph of every batch alive" in finding.message
    assert "torch.no_grad()" in finding.message


@pytest.mark.parametrize(
    "keep",
    [
        "predict = torch.cat((predict, output.detach()))",
        "predict = output.detach() if predict is None else torch.cat((predict, output.detach()))",
        # started anew every iteration: it cannot grow
        "predict = torch.zeros(0)\n        predict = torch.cat((predict, output))",
    ],
)
def test_clean_twins(keep: str) -> None:
    assert findings_of(_evaluation(keep, "torch.zeros(0)"), "ACC002") == []


def test_the_loop_under_no_grad_is_clean() -> None:
    source = _evaluation(FIRST_THEN_CAT).replace("    model.eval()\n", "    model.eval()\n    torch.set_grad_enabled(False)\n")
    assert "set_grad_enabled(False)" in source
    assert findings_of(source, "ACC002") == []


def test_numpy_parts_hold_no_graph() -> None:
    source = _evaluation(
        "predict = np.concatenate((predict, output.cpu().numpy()))", "np.zeros(0)"
    ).replace("import torch\n", "import numpy as np\nimport torch\n").replace(
        "return predict.detach().cpu().numpy()", "return predict"
    )
    assert findings_of(source, "ACC002") == []


def test_a_training_loops_epoch_store() -> None:
    [finding] = findings_of(TRAINING.replace("KEPT", "logits"), "ACC002")
    assert "`all_logits` keeps the autograd graph of `logits` from every iteration alive" in finding.message
    assert findings_of(TRAINING.replace("KEPT", "logits.detach()"), "ACC002") == []
