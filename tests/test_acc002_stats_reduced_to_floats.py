"""ACC002 on a training step that returns its stats dict after a helper reduced it across ranks to
Python floats (`keys = sorted(stats.keys())`, a stack of detached values all-reduced, then
`{k: reduced[i].item() for i, k in enumerate(keys)}`): the loop that keeps every step's stats keeps
floats, not graphs. Reading the dict's keys is no read of its tensors. The same helper returning
the tensors themselves (`{k: stats[k] for k in keys}`) keeps every step's graph: reported.
Forms: the helper in the training script and in another module."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.snippets import findings_of

HELPER = """
import torch
import torch.distributed as dist


def stats_over_ranks(stat_dict):
    keys = sorted(stat_dict.keys())
    stacked = torch.stack([torch.as_tensor(stat_dict[k]).detach().float() for k in keys])
    dist.all_reduce(stacked)
    RETURN
"""

FLOATS = "return {k: stacked[i].item() for (i, k) in enumerate(keys)}"
TENSORS = "return {k: stat_dict[k] for k in keys}"

LOOP = """

def training_step(vae, x, optimizer):
    vae.zero_grad()
    stats = vae.forward(x)
    stats["elbo"].backward()
    optimizer.step()
    stats = stats_over_ranks(stats)
    return stats


def train(vae, loader, optimizer):
    kept = []
    for x in loader:
        training_stats = training_step(vae, x, optimizer)
        kept.append(training_stats)
        print(kept[-1]["elbo"])
"""


def test_stats_reduced_to_floats_are_clean() -> None:
    assert findings_of(HELPER.replace("RETURN", FLOATS) + LOOP, "ACC002") == []


def test_stats_handed_back_as_tensors_are_reported() -> None:
    source = HELPER.replace("RETURN", TENSORS) + LOOP
    [finding] = findings_of(source, "ACC002")
    assert finding.location.row == next(i for i, line in enumerate(source.splitlines(), 1) if "kept.append(training_stats)" in line)


@pytest.mark.parametrize("returned, found", [(FLOATS, 0), (TENSORS, 1)])
def test_the_helper_in_another_module(tmp_path: Path, returned: str, found: int) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "dist_utils.py").write_text(HELPER.replace("RETURN", returned))
    train = tmp_path / "train.py"
    train.write_text("from dist_utils import stats_over_ranks\n" + LOOP)
    assert len(findings_of(train.read_bytes(), "ACC002", path=str(train))) == found
