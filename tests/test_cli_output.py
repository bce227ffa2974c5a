"""What the check command says: honest summaries, --output-file, colour, the `full` format,
and standard input (`-`, --stdin-filename)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from cli_samples import BUGGY, FIXED

pytestmark = pytest.mark.usefixtures("fake_rules")

ACCUMLINT = str(Path(sys.executable).with_name("accumlint"))


@pytest.mark.parametrize("args, broken", [
    (["missing.py"], "missing.py: error: No such file or directory"),
    (["bad.py"], "bad.py: error: syntax error at 1:5"),
    (["-"], "-: error: syntax error at 1:5"),
])
def test_never_all_checks_passed_when_a_file_was_not_checked(project, runner, args, broken):
    from accumlint.cli import cli

    (project / "bad.py").write_text("def (:\n")
    (project / "ok.py").write_text("x = 1\n")
    result = runner.invoke(cli, ["check", "ok.py", *args] if args != ["-"] else ["check", "-"], input="def (:\n")
    assert result.exit_code == 2
    assert broken in result.stderr
    assert "All checks passed!" not in result.stdout
    assert result.stdout.endswith("1 file could not be checked (each error names its cause).\n")


def test_summary_counts_findings_and_unchecked_files(project, invoke):
    (project / "bad.py").write_text("def (:\n")
    (project / "t.py").write_text(BUGGY)
    out = invoke("check", ".").stdout
    assert "Found 1 error.\n1 file could not be checked" in out


def test_output_file_holds_the_report(project, invoke):
    (project / "t.py").write_text(BUGGY)
    result = invoke("check", "--format", "json", "--output-file", "report.json", "t.py")
    assert result.exit_code == 1 and result.stdout == ""
    data = json.loads((project / "report.json").read_text())
    assert [d["code"] for d in data] == ["ACC001"]


def test_output_file_that_cannot_be_written_is_an_error(project, invoke):
    (project / "t.py").write_text(BUGGY)
    result = invoke("check", "--output-file", str(project / "no" / "such" / "dir" / "r.txt"), "t.py")
    assert result.exit_code == 2 and "cannot write" in result.stderr


def test_colour_only_when_asked_or_on_a_terminal(project, runner, monkeypatch):
    from accumlint.cli import cli

    (project / "t.py").write_text(BUGGY)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert "\x1b[" not in runner.invoke(cli, ["check", "t.py"]).stdout  # piped: plain
    forced = runner.invoke(cli, ["check", "t.py"], env={"FORCE_COLOR": "1"}, color=True).stdout
    assert "\x1b[" in forced and "ACC001" in forced
    assert "\x1b[" not in runner.invoke(cli, ["check", "t.py"], env={"FORCE_COLOR": "1", "NO_COLOR": "1"},
                                        color=True).stdout


def test_colour_on_a_real_terminal_and_not_with_no_color(project):
    (project / "t.py").write_text(BUGGY)  # the real rules run in that process: ACC001

    def run_in_terminal(env: dict) -> bytes:
        leader, follower = pty.openpty()
        process = subprocess.Popen([ACCUMLINT, "check", "--no-cache", "t.py"], stdout=follower, stderr=follower,
                                   cwd=project, env=env)
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            output += chunk
        process.wait(timeout=60)
        os.close(leader)
        return output

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    assert b"\x1b[" in run_in_terminal(env)
    assert b"\x1b[" not in run_in_terminal({**env, "NO_COLOR": "1"})


def test_full_format_shows_the_line_and_a_caret(project, invoke):
    (project / "t.py").write_text(BUGGY + "model.no_sync_missing()\n")
    out = invoke("check", "--format", "full", "t.py").stdout
    assert (
        "t.py:3:5: ACC001 [*] loss handed to backward is never divided by accum_steps\n"
        "  |\n"
        "3 |     loss.backward()\n"
        "  |     ^^^^^^^^^^^^^^^ ACC001\n"
        "  = fix: Divide the loss by `accum_steps` at the backward call\n"
    ) in out
    assert "7 | model.no_sync_missing()\n  | ^^^^^^^^^^^^^^^^^^^^^^^ ACC009\n" in out
    assert out.endswith("Found 2 errors.\n[*] 1 fixable with the `--fix` option.\n")


def test_stdin_is_checked_under_its_given_name(project, runner):
    from accumlint.cli import cli

    (project / "pyproject.toml").write_text('[tool.accumlint.per-file-ignores]\n"scripts/*" = ["ACC009"]\n')
    text = BUGGY + "model.no_sync_missing()\n"
    result = runner.invoke(cli, ["check", "--stdin-filename", "scripts/train.py"], input=text)
    assert result.exit_code == 1
    assert [line.split(" ")[0:2] for line in result.stdout.splitlines() if "ACC" in line] == [
        ["scripts/train.py:3:5:", "ACC001"]]  # per-file-ignores applied to the given name
    plain = runner.invoke(cli, ["check", "-"], input=BUGGY)
    assert "-:3:5: ACC001" in plain.stdout
    assert not (project / ".accumlint_cache").exists()  # text from stdin is never cached


def test_stdin_fix_prints_the_fixed_text_and_reports_on_stderr(project, runner):
    from accumlint.cli import cli

    result = runner.invoke(cli, ["check", "--fix", "--stdin-filename", "t.py"], input=BUGGY)
    assert result.stdout == FIXED
    assert "Found 1 error (1 fixed, 0 remaining)." in result.stderr
    assert result.exit_code == 0 and not (project / "t.py").exists()
    unchanged = runner.invoke(cli, ["check", "--fix", "-"], input="x = 1\n")
    assert unchanged.stdout == "x = 1\n"


def test_stdin_filename_with_force_exclude_skips_an_excluded_name(project, runner):
    from accumlint.cli import cli

    (project / "pyproject.toml").write_text('[tool.accumlint]\nexclude = ["legacy/"]\n')
    args = ["check", "--stdin-filename", "legacy/old.py"]
    assert runner.invoke(cli, args, input=BUGGY).exit_code == 1
    skipped = runner.invoke(cli, [*args, "--force-exclude"], input=BUGGY)
    assert skipped.exit_code == 0 and "ACC001" not in skipped.stdout


def test_stdin_and_paths_together_is_a_usage_error(project, runner):
    from accumlint.cli import cli

    (project / "t.py").write_text(BUGGY)
    assert runner.invoke(cli, ["check", "--stdin-filename", "x.py", "t.py"], input="").exit_code == 2
