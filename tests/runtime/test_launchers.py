"""The checker in every rank of a launcher, whatever the entry point: ACCUMLINT_RUN plus our
sitecustomize on PYTHONPATH, here under `python -m torch.distributed.run` and `torchrun` with a
plain script (torchrun -m accumlint.run is in test_run_command.py). Also ACC009 under DDP."""

import json
import os
import re
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from runtime_helpers import ROOT, subprocess_env

DDP_SCRIPT = os.path.join(ROOT, "runtime_checks", "controls", "ddp_no_sync.py")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch(launcher, tmp_path, extra_env, checked=True):
    from accumlint.runtime.autostart import hook_dir

    env = subprocess_env()
    env.update(extra_env)
    if checked:
        env["ACCUMLINT_RUN"] = f"--report {tmp_path}/report.{{rank}}.json"
        env["PYTHONPATH"] = hook_dir() + os.pathsep + env["PYTHONPATH"]
    proc = subprocess.run([*launcher, "--nproc_per_node", "2", "--master_port", str(_free_port()),
                           DDP_SCRIPT], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Two ranks share one stdout pipe: their lines may run together, so read the records, not lines.
    losses = sorted(re.findall(r"rank \d+ loss [0-9.]+", proc.stdout))
    reports = None
    if checked:
        reports = [json.loads((tmp_path / f"report.{r}.json").read_text()) for r in (0, 1)]
    return proc, losses, reports


TORCH_RUN = [sys.executable, "-m", "torch.distributed.run"]
TORCHRUN = [os.path.join(os.path.dirname(sys.executable), "torchrun")]


@pytest.fixture(scope="module")
def launches(tmp_path_factory):
    """The four launches this module reads, two at a time: most of a launch is its three
    interpreters starting and importing torch, and the ranks of one wait on each other."""
    jobs = {
        "buggy": (TORCH_RUN, {"ACC_DDP_BUGGY": "1"}, True),
        "sync": (TORCHRUN, {"ACC_DDP_SYNC": "1"}, True),
        "sync-plain": (TORCHRUN, {"ACC_DDP_SYNC": "1"}, False),
        "no-sync": (TORCH_RUN, {}, True),
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = {
            key: pool.submit(_launch, launcher, tmp_path_factory.mktemp(key), env, checked)
            for key, (launcher, env, checked) in jobs.items()
        }
        return {key: future.result() for key, future in started.items()}


def test_distributed_run_with_a_plain_script_reports_per_rank(launches):
    proc, losses, reports = launches["buggy"]
    assert [[f["code"] for f in rep] for rep in reports] == [["ACC001"], ["ACC001"]]
    assert [rep[0]["evidence"]["rank"] for rep in reports] == [0, 1]
    assert proc.stdout.count("accumlint run: 1 finding (4 optimizer steps, 4 windows") == 2
    assert "accumlint run:" not in proc.stderr  # the launcher's own process was left alone


def test_ddp_sync_every_micro_step_is_acc009_and_numbers_unchanged(launches):
    proc, losses, reports = launches["sync"]
    for rep in reports:
        (finding,) = rep
        assert finding["code"] == "ACC009"
        assert finding["evidence"]["all_reduces_per_window"] == [4, 4, 4, 4]
        assert finding["evidence"]["table"]["columns"][2] == "all-reduced on"
    _, plain_losses, _ = launches["sync-plain"]
    assert losses and losses == plain_losses  # the counting hook changes no number


def test_ddp_with_no_sync_is_clean_under_the_launcher(launches):
    _, _, reports = launches["no-sync"]
    assert reports == [[], []]


def test_launcher_processes_and_helpers_are_left_alone():
    from accumlint.runtime.autostart import is_training_process

    assert is_training_process(["python", "train.py", "--lr", "3"])
    assert is_training_process(["python", "-u", "-m", "pkg.train"])
    assert not is_training_process(["python", "-m", "torch.distributed.run", "train.py"])
    assert not is_training_process(["/venv/bin/python", "/venv/bin/torchrun", "train.py"])
    assert not is_training_process(["/venv/bin/python", "/venv/bin/accelerate", "launch", "t.py"])
    assert not is_training_process(["python", "-c", "from multiprocessing.spawn import main"])
    assert not is_training_process(["python", "-m", "accumlint.run", "train.py"])
