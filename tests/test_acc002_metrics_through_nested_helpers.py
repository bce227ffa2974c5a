"""ACC002 and a metric the project computes through helpers that call helpers (`get_f1` returning
`2 * se * pc / (se + pc)` of what `get_sensitivity` and `get_precision` return, each a
`float(...)` ratio): the value kept is a number however deep its returns go, in a training loop
and in an evaluation pass alike. Twin: a soft metric built from the model's output (`(sr *
gt).sum() / sr.sum()`) is a tensor with its graph, still reported. Forms: helpers in another
module, and in the same one."""

from __future__ import annotations

from pathlib import Path

import pytest

from accumlint.engine import check_source
from tests.snippets import findings_of

HELPERS = """
import torch


def get_sensitivity(sr, gt, threshold=0.5):
    sr = sr > threshold
    tp = ((sr == 1) & (gt == 1)).sum()
    fn = ((sr == 0) & (gt == 1)).sum()
    se = float(tp) / (float(tp + fn) + 1e-6)
    return se


def get_precision(sr, gt, threshold=0.5):
    sr = sr > threshold
    tp = ((sr == 1) & (gt == 1)).sum()
    fp = ((sr == 1) & (gt == 0)).sum()
    pc = float(tp) / (float(tp + fp) + 1e-6)
    return pc


def get_f1(sr, gt, threshold=0.5):
    se = get_sensitivity(sr, gt, threshold=threshold)
    pc = get_precision(sr, gt, threshold=threshold)
    f1 = 2 * se * pc / (se + pc + 1e-6)
    return f1


def get_soft_dice(sr, gt):
    return 2 * (sr * gt).sum() / (sr.sum() + gt.sum() + 1e-6)
"""

LOOPS = """
import torch.nn.functional as F


def train(unet, loader, valid_loader, optimizer, criterion):
    for epoch in range(10):
        score = 0.
        for images, gt in loader:
            sr = F.sigmoid(unet(images))
            loss = criterion(sr, gt)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            score += METRIC(sr, gt)
        print(score)
        unet.eval()
        score = 0.
        for images, gt in valid_loader:
            sr = F.sigmoid(unet(images))
            score += METRIC(sr, gt)
        print(score)
"""


def _rows(findings: list) -> list[int]:
    return sorted(f.location.row for f in findings)


def _kept_rows(metric: str) -> list[int]:
    lines = LOOPS.replace("METRIC", metric).splitlines()
    return [i for i, line in enumerate(lines, 1) if line.strip().startswith("score +=")]


def test_a_number_made_by_nested_helpers_is_clean_in_both_loops() -> None:
    source = HELPERS + LOOPS.replace("METRIC", "get_f1")
    assert [f for f in check_source(source.encode(), "train.py").findings if f.code == "ACC002"] == []


def test_nested_helpers_in_another_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "evaluation.py").write_text(HELPERS)
    source = "from evaluation import get_f1\n" + LOOPS.replace("METRIC", "get_f1")
    (tmp_path / "train.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert findings_of(source.encode(), "ACC002", path="train.py") == []


def test_a_soft_metric_of_the_output_keeps_its_graph() -> None:
    source = HELPERS + LOOPS.replace("METRIC", "get_soft_dice")
    found = [f for f in check_source(source.encode(), "train.py").findings if f.code == "ACC002"]
    offset = len(HELPERS.splitlines())
    assert _rows(found) == [offset + row for row in _kept_rows("get_soft_dice")]
