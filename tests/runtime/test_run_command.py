"""`accumlint run` as a user runs it: real interpreters, real scripts."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from runtime_helpers import ROOT, accumlint_run, subprocess_env
from runtime_checks import SCENARIOS

BY_NAME = {s.name: s for s in SCENARIOS}


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_missing_torch_is_one_clear_line(monkeypatch):
    from accumlint.runtime import cli

    monkeypatch.setattr(cli, "torch_available", lambda: False)
    result = CliRunner().invoke(cli.run_command, ["train.py"])
    assert result.exit_code == 2
    assert result.output.strip() == "accumlint run needs torch: pip install 'accumlint[runtime]'"


def test_script_runs_as_python_would(tmp_path):
    _write(tmp_path, "helper.py", "VALUE = 41\n")
    script = _write(tmp_path, "train.py", """
        import sys
        import helper
        print("argv", sys.argv)
        print("path0", sys.path[0])
        print("name", __name__, sys.modules["__main__"].__file__)
        print("value", helper.VALUE + 1)
    """)
    proc = accumlint_run(script, "--lr", "3", "-x", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert f"argv ['{script}', '--lr', '3', '-x']" in proc.stdout
    assert f"path0 {tmp_path}" in proc.stdout
    assert f"name __main__ {script}" in proc.stdout
    assert "value 42" in proc.stdout


def test_exit_status_is_the_scripts_own_without_findings(tmp_path):
    script = _write(tmp_path, "fail.py", "import sys\nsys.exit(3)\n")
    assert accumlint_run(script).returncode == 3
    crash = _write(tmp_path, "crash.py", "raise ValueError('boom')\n")
    proc = accumlint_run(crash)
    assert proc.returncode == 1 and "ValueError: boom" in proc.stderr


def test_json_format_and_report_file(tmp_path):
    report = tmp_path / "out.json"
    proc = accumlint_run("--format", "json", "--report", str(report),
                         BY_NAME["acc001_not_divided"].path("buggy"))
    assert proc.returncode == 1
    printed = json.loads(proc.stdout[proc.stdout.index("[\n"):])
    written = json.loads(report.read_text())
    assert printed == written
    (finding,) = written
    assert finding["code"] == "ACC001"
    assert finding["location"] == {"row": 21, "column": 1}
    assert {"message", "filename", "end_location", "fix", "url", "evidence"} <= finding.keys()
    assert finding["fix"] is None and finding["evidence"]["window"] == 4


def test_text_format_is_path_line_col_code(tmp_path):
    proc = accumlint_run(BY_NAME["acc007_zero_in_window"].path("buggy"))
    line = next(l for l in proc.stdout.splitlines() if " ACC007 " in l)
    assert line.startswith(os.path.join("runtime_checks", "scenarios", "acc007_zero_in_window",
                                        "buggy.py") + ":20:1: ACC007 ")
    assert line.endswith("]") and "dropped_backward_passes=1" in line


def test_max_steps_stops_cleanly_and_runs_finally(tmp_path):
    script = _write(tmp_path, "forever.py", """
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        steps = 0
        try:
            while True:
                try:
                    model(torch.randn(4, 2)).pow(2).mean().backward()
                    opt.step()
                    opt.zero_grad()
                    steps += 1
                except Exception:
                    print("swallowed")
        finally:
            print("finally after", steps)
    """)
    proc = accumlint_run("--max-steps", "5", script)
    assert proc.returncode == 0, proc.stderr
    assert "finally after 4" in proc.stdout  # the 5th step raised before `steps += 1`
    assert "swallowed" not in proc.stdout


def test_same_seed_same_numbers_with_and_without_the_checker():
    for name in ("seed002_rnn_amp_full_bptt", "acc004_clip_scaled"):
        script = BY_NAME[name].path("fixed")
        plain = subprocess.run([sys.executable, script], capture_output=True, text=True,
                               env=subprocess_env(), cwd=ROOT)
        checked = accumlint_run(script)
        epochs = lambda out: [l for l in out.splitlines() if l.startswith("epoch")]  # noqa: E731
        assert epochs(plain.stdout) and epochs(plain.stdout) == epochs(checked.stdout)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("buggy", [False, True])
def test_torchrun_ddp_no_sync(tmp_path, buggy):
    env = subprocess_env()
    env["ACC_DDP_BUGGY"] = "1" if buggy else "0"
    report = tmp_path / "report.json"
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    proc = subprocess.run(
        [torchrun, "--nproc_per_node", "2", "--master_port", str(_free_port()),
         "-m", "accumlint.run", "--report", str(report),
         os.path.join(ROOT, "runtime_checks", "controls", "ddp_no_sync.py")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    reports = [json.loads((tmp_path / f"report.rank{r}.json").read_text()) for r in (0, 1)]
    if buggy:
        assert all([f["code"] for f in rep] == ["ACC001"] for rep in reports), proc.stdout
        # Findings do not fail the ranks under a launcher (no ChildFailedError); each rank says so.
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "ChildFailedError" not in proc.stderr
        assert proc.stderr.count("has 1 finding (see above)") == 2
    else:
        assert reports == [[], []], proc.stdout
        assert proc.returncode == 0, proc.stderr[-2000:]

def test_registering_the_command_does_not_import_torch():
    code = ("import sys; import accumlint.runtime.cli, accumlint.run; "
            "print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=subprocess_env(), cwd=ROOT)
    assert proc.stdout.strip() == "False", proc.stderr


# What torchrun sets in each rank (simulated: the decision reads only these variables).
_RANK_ENV = {"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "TORCHELASTIC_RUN_ID": "run-1"}


@pytest.mark.parametrize(
    "flags, under_launcher, status",
    [
        ((), False, 1),
        (("--exit-zero",), False, 0),
        ((), True, 0),
        (("--exit-code",), True, 1),
        (("--exit-code",), False, 1),
    ],
)
def test_exit_status_with_findings(flags, under_launcher, status):
    proc = accumlint_run(*flags, BY_NAME["acc001_not_divided"].path("buggy"),
                         extra_env=_RANK_ENV if under_launcher else None)
    assert proc.returncode == status, proc.stderr[-2000:]
    assert "ACC001" in proc.stdout  # the findings are reported whatever the status
    said = "has 1 finding (see above)" in proc.stderr
    assert said == (under_launcher and not flags)


def test_a_failing_script_keeps_its_status_under_a_launcher(tmp_path):
    script = _write(tmp_path, "fail.py", "import sys\nsys.exit(3)\n")
    assert accumlint_run(script, extra_env=_RANK_ENV).returncode == 3
