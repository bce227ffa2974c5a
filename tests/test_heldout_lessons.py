"""General shapes learned from the repositories held out until the end of issue 19's last stop
(their findings were read as the figures of record first). Each test has a twin that still reports.

- A project helper that switches DDP sync itself, entered around the micro-step
  (`with misc.ddp_sync(ddp, last_round):` whose body enters `module.no_sync()`): no ACC009.
- A helper that stores its argument under `torch.no_grad()`, and one that returns `float(...)`
  values: no graph reaches the caller's store.
- k kept in a mapping on the model (`model.hyperparams["subdivisions"]`): the loss the model
  computes is not thereby "divided by k"; ACC001 reads the window.
"""

from __future__ import annotations

from pathlib import Path

from tests.snippets import findings

SYNC_HELPER = '''
import contextlib
import torch


@contextlib.contextmanager
def ddp_sync(module, sync):
    if sync or not isinstance(module, torch.nn.parallel.DistributedDataParallel):
        yield
    else:
        with module.{control}():
            yield
'''

ROUNDS = '''
import torch
from torch_utils import misc


def training_loop(net, device, optimizer, loss_fn, batches, rounds):
    ddp = torch.nn.parallel.DistributedDataParallel(net, device_ids=[device])
    while True:
        optimizer.zero_grad(set_to_none=True)
        for round_idx in range(rounds):
            with misc.ddp_sync(ddp, round_idx == rounds - 1):
                loss = loss_fn(net=ddp, images=next(batches))
                loss.sum().mul(1.0 / rounds).backward()
        optimizer.step()
'''

STATS = '''
import torch


def record(stats, i, value):
    {guard}
        stats["value"][i] = value.mean()


def debug_metrics(logits):
    with torch.no_grad():
        spread = logits.std()
    return {{"spread": {returned}}}


def train(model, loader, optimizer, stats):
    totals = {{}}
    for i, batch in enumerate(loader):
        logits = model(batch)
        loss = logits.mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        record(stats, i, logits)
        for k, v in debug_metrics(logits).items():
            totals[k] = totals.get(k, 0.0) + v
    print(totals, stats)
'''

YOLO = '''
import torch


def run(model, dataloader, optimizer, epochs):
    for epoch in range(1, epochs + 1):
        for batch_i, (imgs, targets) in enumerate(dataloader):
            batches_done = len(dataloader) * epoch + batch_i
            loss = torch.nn.functional.mse_loss(model(imgs), targets){scale}
            loss.backward()
            if batches_done % model.hyperparams["subdivisions"] == 0:
                optimizer.step()
                optimizer.zero_grad()
'''



def _project(tmp_path: Path, monkeypatch, control: str) -> list[tuple[str, int]]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "torch_utils").mkdir()
    (tmp_path / "torch_utils" / "__init__.py").write_text("")
    (tmp_path / "torch_utils" / "misc.py").write_text(SYNC_HELPER.format(control=control).lstrip())
    (tmp_path / "loop.py").write_text(ROUNDS.lstrip())
    monkeypatch.chdir(tmp_path)
    return findings((tmp_path / "loop.py").read_text(), "loop.py")


def test_a_helper_that_enters_no_sync_controls_sync(tmp_path, monkeypatch):
    assert _project(tmp_path, monkeypatch, "no_sync") == []


def test_a_helper_that_enters_something_else_does_not(tmp_path, monkeypatch):
    assert [code for code, _ in _project(tmp_path, monkeypatch, "autocast")] == ["ACC009"]


def test_stores_under_no_grad_and_float_returns_keep_no_graph():
    source = STATS.format(guard="with torch.no_grad():", returned="float(spread)")
    assert findings(source) == []


def test_a_store_with_autograd_on_is_still_reported():
    source = STATS.format(guard="if True:", returned="float(spread)")
    assert [code for code, _ in findings(source)] == ["ACC002"]


def test_k_in_a_mapping_on_the_model_makes_a_window():
    found = findings(YOLO.format(scale=""))
    assert [code for code, _ in found if code == "ACC001"] == ["ACC001"]
    assert all(code != "ACC001" for code, _ in findings(YOLO.format(scale=' / model.hyperparams["subdivisions"]')))
