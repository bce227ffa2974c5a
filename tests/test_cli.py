"""The check command end to end through click: exit codes, text output, errors, discovery."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_samples import BUGGY, FIXED

pytestmark = pytest.mark.usefixtures("fake_rules")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_clean_file_exits_zero(project, invoke):
    write(project / "train.py", FIXED)
    result = invoke("check", "train.py")
    assert result.exit_code == 0
    assert result.stdout == "All checks passed!\n"


def test_finding_is_reported_like_ruff_and_exits_one(project, invoke):
    write(project / "train.py", BUGGY)
    result = invoke("check", "train.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "train.py:3:5: ACC001 [*] loss handed to backward is never divided by accum_steps"
    assert lines[1] == "Found 1 error."
    assert lines[2] == "[*] 1 fixable with the `--fix` option."


def test_exit_zero_keeps_output_but_exits_zero(project, invoke):
    write(project / "train.py", BUGGY)
    result = invoke("check", "--exit-zero", "train.py")
    assert result.exit_code == 0
    assert "ACC001" in result.stdout


def test_folders_are_searched_recursively_and_output_is_sorted(project, invoke):
    write(project / "b" / "deep" / "two.py", BUGGY)
    write(project / "a.py", BUGGY)
    write(project / "notes.txt", BUGGY)  # not a Python file: not found by the walk
    write(project / ".venv" / "lib" / "x.py", BUGGY)  # virtual environments are skipped
    result = invoke("check", ".")
    files = [line.split(":")[0] for line in result.stdout.splitlines() if ": ACC" in line]
    assert files == ["a.py", os.path.join("b", "deep", "two.py")]
    assert "Found 2 errors." in result.stdout


def test_no_path_means_current_directory(project, invoke):
    write(project / "a.py", BUGGY)
    assert invoke("check").exit_code == 1


def test_zero_files_is_not_an_error(project, invoke):
    (project / "empty").mkdir()
    result = invoke("check", "empty")
    assert result.exit_code == 0
    assert "No Python files found" in result.stderr


def test_syntax_error_is_one_line_on_stderr_and_other_files_are_still_checked(project, invoke):
    write(project / "bad.py", "def broken(:\n    loss.backward()\n")
    write(project / "good.py", BUGGY)
    result = invoke("check", ".")
    assert result.exit_code == 2
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("bad.py")]
    assert len(error_lines) == 1 and error_lines[0].startswith("bad.py: error: syntax error")
    assert "good.py:3:5: ACC001" in result.stdout
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_path_is_an_error_but_others_are_checked(project, invoke):
    write(project / "good.py", BUGGY)
    result = invoke("check", "nope.py", "good.py")
    assert result.exit_code == 2
    assert "nope.py: error: No such file or directory" in result.stderr
    assert "good.py:3:5: ACC001" in result.stdout


def test_undecodable_file_is_an_error(project, invoke):
    (project / "latin.py").write_bytes(b"x = '\xe9'\nloss.backward()\n")  # no coding cookie
    result = invoke("check", "latin.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("latin.py: error: ")
    assert "Traceback" not in result.stderr


def test_unreadable_file_is_an_error(project, invoke):
    (project / "dangling.py").symlink_to(project / "gone.py")
    write(project / "good.py", BUGGY)
    result = invoke("check", "dangling.py", "good.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("dangling.py: error: ")
    assert "good.py:3:5: ACC001" in result.stdout


def test_select_and_ignore_take_codes_and_prefixes(project, invoke):
    write(project / "t.py", BUGGY + "model.no_sync_missing()\n")
    assert "ACC009" not in invoke("check", "--select", "ACC001", "t.py").stdout
    only_9 = invoke("check", "--select", "ACC00", "--ignore", "ACC001,ACC002", "t.py").stdout
    assert "ACC009" in only_9 and "ACC001" not in only_9
    result = invoke("check", "--ignore", "ACC", "t.py")
    assert result.exit_code == 0


def test_unknown_selector_is_a_usage_error(project, invoke):
    write(project / "t.py", BUGGY)
    result = invoke("check", "--select", "ACC999", "t.py")
    assert result.exit_code == 2
    assert "ACC999" in result.stderr


def test_statistics_counts_per_code_with_name(project, invoke):
    write(project / "t.py", BUGGY + BUGGY + "model.no_sync_missing()\n")
    result = invoke("check", "--statistics", "t.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "2\tACC001\t[*] unscaled-accumulated-loss",
        "1\tACC009\t    ddp-sync-every-micro-step",
    ]


def test_version(invoke):
    from accumlint import __version__

    for args in (("--version",), ("check", "--version")):
        result = invoke(*args)
        assert result.exit_code == 0
        assert result.stdout.strip() == f"accumlint {__version__}"


def test_check_help_has_examples_and_exit_codes(invoke):
    text = invoke("check", "--help").stdout
    assert "accumlint check src --fix" in text
    assert "2  a usage or configuration error" in text


def test_no_cache_is_accepted(project, invoke):
    write(project / "t.py", BUGGY)
    assert invoke("check", "--no-cache", "t.py").exit_code == 1
    assert not (project / ".accumlint_cache").exists()


def test_internal_error_is_one_line_unless_verbose(project, invoke, monkeypatch):
    from accumlint import rules

    def broken(facts):
        raise RuntimeError("rule exploded")

    monkeypatch.setitem(rules.RULE_CHECKS, "ACC002", broken)
    write(project / "t.py", BUGGY)
    for flags in ((), ("--fix",)):
        result = invoke("check", "--no-cache", *flags, "t.py")
        assert result.exit_code == 2
        assert "t.py: error: internal error: RuntimeError: rule exploded" in result.stderr
        assert "Traceback" not in result.stderr
    verbose = invoke("check", "--no-cache", "--fix", "--verbose", "t.py")
    assert "Traceback" in verbose.stderr


def test_run_is_registered_lazily_and_fails_cleanly_without_the_runtime(invoke, monkeypatch):
    from accumlint import cli

    monkeypatch.setitem(cli.LAZY_COMMANDS, "run", ("accumlint.runtime.no_such_module", "run_command", "x"))
    assert "run" in invoke("--help").stdout
    result = invoke("run", "--max-steps", "3", "script.py")
    assert result.exit_code == 2
    assert "runtime checker is not part of this installation" in result.stderr


def test_server_without_pygls_names_the_extra(invoke, monkeypatch):
    monkeypatch.delitem(sys.modules, "accumlint.server", raising=False)
    monkeypatch.setitem(sys.modules, "pygls", None)  # as if pygls were not installed
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    assert "server" in invoke("--help").stdout
    result = invoke("server")
    assert result.exit_code == 2
    assert "needs pygls (pip install 'accumlint[lsp]')" in result.stderr


def _subprocess_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def test_installed_command_and_python_m_run_for_real(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "bad.py").write_text("def broken(:\n")
    (tmp_path / "good.py").write_text("x = 1\n")
    command = Path(sys.executable).with_name("accumlint")
    for argv in ([str(command)], [sys.executable, "-m", "accumlint"]):
        good = subprocess.run([*argv, "check", "good.py"], cwd=tmp_path, capture_output=True, text=True,
                              env=_subprocess_env(), timeout=60)
        assert good.returncode == 0, good.stderr
        assert good.stdout == "All checks passed!\n"
        bad = subprocess.run([*argv, "check", "--no-cache", "."], cwd=tmp_path, capture_output=True,
                             text=True, env=_subprocess_env(), timeout=60)
        assert bad.returncode == 2
        assert bad.stderr.startswith("bad.py: error: syntax error")
        assert "Traceback" not in bad.stderr


def test_check_and_help_never_import_torch(tmp_path):
    (tmp_path / "t.py").write_text(BUGGY)
    code = (
        "import sys\n"
        "from accumlint.cli import cli\n"
        "for args in (['--help'], ['check', '--no-cache', 't.py'], ['rule', '--all']):\n"
        "    try:\n"
        "        cli.main(args=args, prog_name='accumlint')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env=_subprocess_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("ok\n")
