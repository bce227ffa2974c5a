"""`accumlint run` as a user runs it: real interpreters, real scripts."""

import json
import os
import socket
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from runtime_helpers import ROOT, accumlint_run, subprocess_env
from runtime_checks import SCENARIOS

BY_NAME = {s.name: s for s in SCENARIOS}
SAME_SEED = ("seed002_rnn_amp_full_bptt", "acc004_clip_scaled")
# What torchrun sets in each rank (simulated: the decision reads only these variables).
_RANK_ENV = {"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "TORCHELASTIC_RUN_ID": "run-1"}
EXIT_CASES = [
    ((), False, 1),
    (("--exit-zero",), False, 0),
    ((), True, 0),
    (("--exit-code",), True, 1),
    (("--exit-code",), False, 1),
]


FILES = {
    "helper.py": "VALUE = 41\n",
    "train.py": """
        import sys
        import helper
        print("argv", sys.argv)
        print("path0", sys.path[0])
        print("name", __name__, sys.modules["__main__"].__file__)
        print("value", helper.VALUE + 1)
    """,
    "fail.py": "import sys\nsys.exit(3)\n",
    "crash.py": "raise ValueError('boom')\n",
    "forever.py": """
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
    """,
}


def _plain_python(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, script], capture_output=True, text=True, env=subprocess_env(), cwd=ROOT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The runs that need no file of their own test, started side by side: each is a fresh
    interpreter importing torch, and waiting for them one after another is most of this module's
    time. Keyed by what each test asks for."""
    folder = tmp_path_factory.mktemp("scripts")
    files = {name: _write(folder, name, text) for name, text in FILES.items()}
    report = folder / "out.json"
    buggy = BY_NAME["acc001_not_divided"].path("buggy")
    jobs = {
        ("exit", index): (lambda flags=flags, launched=launched: accumlint_run(
            *flags, buggy, extra_env=_RANK_ENV if launched else None))
        for index, (flags, launched, _) in enumerate(EXIT_CASES)
    }
    jobs["as-python"] = lambda: accumlint_run(files["train.py"], "--lr", "3", "-x", cwd=str(folder))
    jobs["fail"] = lambda: accumlint_run(files["fail.py"])
    jobs["fail-launched"] = lambda: accumlint_run(files["fail.py"], extra_env=_RANK_ENV)
    jobs["crash"] = lambda: accumlint_run(files["crash.py"])
    jobs["max-steps"] = lambda: accumlint_run("--max-steps", "5", files["forever.py"])
    jobs["json"] = lambda: accumlint_run("--format", "json", "--report", str(report), buggy)
    jobs["text"] = lambda: accumlint_run(BY_NAME["acc007_zero_in_window"].path("buggy"))
    for flagged in (False, True):
        jobs[("torchrun", flagged)] = lambda flagged=flagged: _torchrun(folder, flagged)
    for name in SAME_SEED:
        script = BY_NAME[name].path("fixed")
        jobs[("plain", name)] = lambda script=script: _plain_python(script)
        jobs[("checked", name)] = lambda script=script: accumlint_run(script)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        started = {key: pool.submit(job) for key, job in jobs.items()}
        done = {key: future.result() for key, future in started.items()}
    done.update(report=report, files=files, folder=folder)
    return done


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


def test_script_runs_as_python_would(runs):
    proc, script, folder = runs["as-python"], runs["files"]["train.py"], runs["folder"]
    assert proc.returncode == 0, proc.stderr
    assert f"argv ['{script}', '--lr', '3', '-x']" in proc.stdout
    assert f"path0 {folder}" in proc.stdout
    assert f"name __main__ {script}" in proc.stdout
    assert "value 42" in proc.stdout


def test_exit_status_is_the_scripts_own_without_findings(runs):
    assert runs["fail"].returncode == 3
    proc = runs["crash"]
    assert proc.returncode == 1 and "ValueError: boom" in proc.stderr


def test_json_format_and_report_file(runs):
    report, proc = runs["report"], runs["json"]
    assert proc.returncode == 1
    printed = json.loads(proc.stdout[proc.stdout.index("[\n"):])
    written = json.loads(report.read_text())
    assert printed == written
    (finding,) = written
    assert finding["code"] == "ACC001"
    assert finding["location"] == {"row": 21, "column": 1}
    assert {"message", "filename", "end_location", "fix", "url", "evidence"} <= finding.keys()
    assert finding["fix"] is None and finding["evidence"]["window"] == 4


def test_text_format_is_path_line_col_code(runs):
    proc = runs["text"]
    line = next(l for l in proc.stdout.splitlines() if " ACC007 " in l)
    assert line.startswith(os.path.join("runtime_checks", "scenarios", "acc007_zero_in_window",
                                        "buggy.py") + ":20:1: ACC007 ")
    assert line.endswith("]") and "dropped_backward_passes=1" in line


def test_max_steps_stops_cleanly_and_runs_finally(runs):
    proc = runs["max-steps"]
    assert proc.returncode == 0, proc.stderr
    assert "finally after 4" in proc.stdout  # the 5th step raised before `steps += 1`
    assert "swallowed" not in proc.stdout


def test_same_seed_same_numbers_with_and_without_the_checker(runs):
    for name in SAME_SEED:
        plain, checked = runs[("plain", name)], runs[("checked", name)]
        epochs = lambda out: [l for l in out.splitlines() if l.startswith("epoch")]  # noqa: E731
        assert epochs(plain.stdout) and epochs(plain.stdout) == epochs(checked.stdout)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _torchrun(folder, buggy: bool) -> tuple[subprocess.CompletedProcess, list]:
    env = subprocess_env()
    env["ACC_DDP_BUGGY"] = "1" if buggy else "0"
    report = folder / f"report-{buggy}.json"
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    proc = subprocess.run(
        [torchrun, "--nproc_per_node", "2", "--master_port", str(_free_port()),
         "-m", "accumlint.run", "--report", str(report),
         os.path.join(ROOT, "runtime_checks", "controls", "ddp_no_sync.py")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    reports = [json.loads((folder / f"report-{buggy}.rank{r}.json").read_text()) for r in (0, 1)]
    return proc, reports


@pytest.mark.parametrize("buggy", [False, True])
def test_torchrun_ddp_no_sync(runs, buggy):
    proc, reports = runs[("torchrun", buggy)]
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


@pytest.mark.parametrize("index", range(len(EXIT_CASES)), ids=lambda i: f"{' '.join(EXIT_CASES[i][0]) or 'default'}"
                         f"{'-launched' if EXIT_CASES[i][1] else ''}")
def test_exit_status_with_findings(runs, index):
    flags, under_launcher, status = EXIT_CASES[index]
    proc = runs[("exit", index)]
    assert proc.returncode == status, proc.stderr[-2000:]
    assert "ACC001" in proc.stdout  # the findings are reported whatever the status
    said = "has 1 finding (see above)" in proc.stderr
    assert said == (under_launcher and not flags)


def test_a_failing_script_keeps_its_status_under_a_launcher(runs):
    assert runs["fail-launched"].returncode == 3
