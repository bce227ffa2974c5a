"""ACC002 on a value made from the model's outputs by a function whose code is not in sight (a
notebook's `accuracy` defined in another cell, a metric imported from a library) and that is not
on the way to backward: what it returns is unknown, a number more often than not, so nothing is
reported, in a training loop or an evaluation loop. Still reported: the outputs themselves, and a
value an unseen function makes on the way to the loss."""

from __future__ import annotations

import json

from accumlint.notebook import check_notebook
from snippets import findings, row

ACCURACY_CELL = """
def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        _, pred = output.topk(max(topk), 1, True, True)
        correct = pred.t().eq(target.view(1, -1))
        return [correct[:k].reshape(-1).float().sum(0) * 100.0 / target.size(0) for k in topk]
"""
TRAIN_CELL = """
for epoch in range(epochs):
    top1_train = 0
    for x, y in train_loader:
        logits = model(x)
        loss = criterion(logits, y)
        top1 = accuracy(logits, y, topk=(1,))
        top1_train += top1[0]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    top1_test = 0
    for x, y in test_loader:
        logits = model(x)
        top1_test += accuracy(logits, y)[0]
"""


def _notebook(*sources: str) -> bytes:
    cells = [{"cell_type": "code", "metadata": {}, "source": s.lstrip("\n"), "execution_count": None, "outputs": []}
             for s in sources]
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}},
                       "nbformat": 4, "nbformat_minor": 5}).encode()


def test_a_metric_defined_in_another_notebook_cell_is_not_a_graph():
    result = check_notebook(_notebook("import torch\n", ACCURACY_CELL, TRAIN_CELL), "eval.ipynb", select=("ACC002",))
    assert [f.code for f in result.findings()] == []


def test_the_outputs_themselves_kept_in_that_cell_are_still_reported():
    kept = TRAIN_CELL.replace("top1_train += top1[0]", "top1_train += logits.sum()")
    result = check_notebook(_notebook("import torch\n", ACCURACY_CELL, kept), "eval.ipynb", select=("ACC002",))
    assert [(f.code, f.location.row) for f in result.findings()] == [("ACC002", row(kept, "top1_train += logits.sum()"))]


SCRIPT = """
import torch
from metrics_lib import top_k_accuracy


def train(model, loader, optimizer, criterion, trunk, head):
    history = []
    for x, y in loader:
        {forward}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append({kept})
"""


def test_a_library_metric_of_the_outputs_is_not_a_graph():
    source = SCRIPT.replace("{forward}", "logits = model(x)\n        loss = criterion(logits, y)\n        acc = top_k_accuracy(logits, y)").replace("{kept}", "acc")
    assert [c for c, _ in findings(source)] == []


def test_a_value_an_unseen_function_makes_on_the_way_to_the_loss_is_still_reported():
    source = SCRIPT.replace("{forward}", "feat = trunk(x)\n        loss = head(feat, y)").replace("{kept}", "feat")
    assert findings(source) == [("ACC002", row(source, "history.append(feat)"))]
