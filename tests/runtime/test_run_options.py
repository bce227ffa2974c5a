"""`accumlint run`'s command line: options before the script are ours, everything after the
script or `-m module` is the script's; a run that could not be checked says so."""

import json
import os
import textwrap

from click.testing import CliRunner

from runtime_helpers import accumlint_run


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_unknown_option_before_the_script_is_a_usage_error(tmp_path):
    from accumlint.runtime.cli import run_command

    result = CliRunner().invoke(run_command, ["--bogus", "train.py"])
    assert result.exit_code == 2
    assert "No such option '--bogus'" in result.output
    assert "no such script" not in result.output


def test_no_script_is_a_usage_error():
    from accumlint.runtime.cli import run_command

    result = CliRunner().invoke(run_command, ["--max-steps", "3"])
    assert result.exit_code == 2 and "give a script to run, or -m MODULE" in result.output


def test_everything_after_the_script_goes_to_it(tmp_path):
    script = _write(tmp_path, "echo.py", "import sys\nprint('argv', sys.argv[1:])\n")
    proc = accumlint_run("--max-steps", "2", script, "--verify", "--max-steps", "9", "-m", "x")
    assert proc.returncode == 0, proc.stderr
    assert "argv ['--verify', '--max-steps', '9', '-m', 'x']" in proc.stdout


def test_module_runs_as_python_dash_m(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("WEIGHT = 4\n")
    (package / "train.py").write_text(textwrap.dedent("""
        import sys
        import torch
        from pkg.helpers import WEIGHT  # a package import: fails when run by its path
        print("argv", sys.argv[1:], __name__)
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(8):
            model(torch.randn(4, 2)).pow(2).mean().backward()  # undivided
            if (i + 1) % WEIGHT == 0:
                opt.step()
                opt.zero_grad()
    """))
    report = tmp_path / "r.json"
    proc = accumlint_run("--report", str(report), "-m", "pkg.train", "--lr", "3",
                         cwd=str(tmp_path))
    assert "argv ['--lr', '3'] __main__" in proc.stdout, proc.stderr
    assert [f["code"] for f in json.loads(report.read_text())] == ["ACC001"]
    assert proc.returncode == 1


def test_a_crash_is_reported_with_what_was_observed(tmp_path):
    script = _write(tmp_path, "crash.py", """
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            (model(torch.randn(4, 2)).pow(2).mean() / 2).backward()
            if step % 2 == 1:
                opt.step()
                opt.zero_grad()
            if step == 6:
                raise ValueError("boom at step 3")
    """)
    proc = accumlint_run(script)
    assert proc.returncode == 1
    last = proc.stdout.strip().splitlines()[-1]
    assert "could not be checked to its end" in last
    assert "ValueError: boom at step 3 (exit status 1)" in last
    assert "3 optimizer steps, 3 windows, 7 backward passes observed" in last
    assert "0 findings up to there" in last


def test_an_import_error_is_not_zero_findings(tmp_path):
    script = _write(tmp_path, "imports.py", "from .sibling import thing\n")
    proc = accumlint_run(script)
    assert proc.returncode == 1
    assert "ImportError" in proc.stdout.splitlines()[-1]
    assert "accumlint run: 0 findings\n" not in proc.stdout


def test_no_optimizer_step_says_nothing_was_checked(tmp_path):
    script = _write(tmp_path, "noop.py", "print('hello')\n")
    proc = accumlint_run(script)
    assert proc.returncode == 0
    assert "no optimizer step was observed" in proc.stdout and "nothing was checked" in proc.stdout


def test_json_format_keeps_the_list_and_says_the_run_on_stderr(tmp_path):
    script = _write(tmp_path, "exit3.py", "import sys\nsys.exit(3)\n")
    proc = accumlint_run("--format", "json", script)
    assert proc.returncode == 3
    assert json.loads(proc.stdout) == []
    assert "exited with status 3" in proc.stderr
    assert os.path.exists(script)
