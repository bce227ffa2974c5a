"""--fix, --diff, --unsafe-fixes, --show-fixes: what is written, what is shown, byte for byte."""

from __future__ import annotations

import stat

import pytest

from cli_samples import BUGGY, FIXED

pytestmark = pytest.mark.usefixtures("fake_rules")

UNSAFE = "for x in loader:\n    (model(x) / k).backward(retain_graph=True)\n"


def test_diff_shows_the_fix_and_writes_nothing(project, invoke):
    path = project / "train.py"
    path.write_text(BUGGY)
    result = invoke("check", "--diff", "train.py")
    assert result.exit_code == 1
    assert path.read_text() == BUGGY
    assert result.stdout.startswith("--- train.py\n+++ train.py\n@@ ")
    assert "-    loss.backward()\n+    (loss / accum_steps).backward()\n" in result.stdout
    assert "Would fix 1 error." in result.stderr


def test_diff_of_a_clean_file_is_empty_and_exits_zero(project, invoke):
    (project / "train.py").write_text(FIXED)
    result = invoke("check", "--diff", "train.py")
    assert (result.exit_code, result.stdout) == (0, "")


def test_fix_writes_the_file_and_exits_zero_when_nothing_remains(project, invoke):
    path = project / "train.py"
    path.write_text(BUGGY)
    result = invoke("check", "--fix", "train.py")
    assert result.exit_code == 0
    assert path.read_text() == FIXED
    assert "Found 1 error (1 fixed, 0 remaining)." in result.stdout


def test_fix_exits_one_when_findings_remain(project, invoke):
    path = project / "train.py"
    path.write_text(BUGGY + "model.no_sync_missing()\n")
    result = invoke("check", "--fix", "train.py")
    assert result.exit_code == 1
    assert path.read_text() == FIXED + "model.no_sync_missing()\n"
    assert "train.py:7:1: ACC009" in result.stdout
    assert "Found 2 errors (1 fixed, 1 remaining)." in result.stdout


def test_fix_twice_is_fix_once(project, invoke):
    path = project / "train.py"
    path.write_text(BUGGY)
    invoke("check", "--fix", "train.py")
    once = path.read_bytes()
    second = invoke("check", "--fix", "train.py")
    assert path.read_bytes() == once
    assert second.exit_code == 0
    assert second.stdout == "All checks passed!\n"


def test_unsafe_fixes_are_hidden_and_counted_without_the_flag(project, invoke):
    path = project / "train.py"
    path.write_text(UNSAFE)
    check = invoke("check", "train.py")
    assert "train.py:2:5: ACC006 backward" in check.stdout  # no [*]: not fixable as asked
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in check.stdout
    fixed = invoke("check", "--fix", "train.py")
    assert fixed.exit_code == 1 and path.read_text() == UNSAFE
    applied = invoke("check", "--fix", "--unsafe-fixes", "train.py")
    assert applied.exit_code == 0
    assert path.read_text() == "for x in loader:\n    (model(x) / k).backward()\n"


def test_show_fixes_says_what_each_fix_does(project, invoke):
    (project / "train.py").write_text(BUGGY + UNSAFE)
    out = invoke("check", "--show-fixes", "train.py").stdout
    assert "  fix (safe): Divide the loss by `accum_steps` at the backward call\n" in out
    assert "  fix (unsafe): Remove `retain_graph=True`\n" in out
    fixed = invoke("check", "--fix", "--show-fixes", "train.py").stdout
    assert "Fixed:\n- train.py:\n    1 × ACC001 (unscaled-accumulated-loss)\n" in fixed


@pytest.mark.parametrize(
    "original",
    [
        BUGGY.replace("\n", "\r\n").encode(),  # Windows line endings
        BUGGY.rstrip("\n").encode(),  # no newline at the end
        b"# -*- coding: latin-1 -*-\n# caf\xe9 \xa9\n" + BUGGY.encode(),  # not UTF-8
        b"\xef\xbb\xbf" + BUGGY.encode(),  # byte-order mark
        b"\t# tabs\tand trailing spaces   \n" + BUGGY.encode() + b"\n\n\n",
    ],
    ids=["crlf", "no-final-newline", "latin-1", "bom", "whitespace"],
)
def test_fix_changes_only_the_fixed_bytes(project, invoke, original):
    path = project / "train.py"
    path.write_bytes(original)
    invoke("check", "--fix", "train.py")
    old, new = b"    loss.backward()", b"    (loss / accum_steps).backward()"
    assert path.read_bytes() == original.replace(old, new)


def test_fix_keeps_the_file_mode_and_leaves_no_temp_files(project, invoke):
    path = project / "train.py"
    path.write_text(BUGGY)
    path.chmod(0o751)
    invoke("check", "--fix", "train.py")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in project.iterdir()) == [".git", "train.py"]


def test_fix_through_a_symlink_rewrites_the_target(project, invoke):
    target = project / "real.py"
    target.write_text(BUGGY)
    (project / "link.py").symlink_to(target)
    invoke("check", "--fix", "link.py")
    assert (project / "link.py").is_symlink()
    assert target.read_text() == FIXED


def test_a_failed_write_loses_nothing_and_is_reported(project, invoke, monkeypatch):
    import accumlint.writer

    path = project / "train.py"
    path.write_text(BUGGY)

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    real_replace = accumlint.writer.os.replace
    monkeypatch.setattr(accumlint.writer.os, "replace", full_disk)
    result = invoke("check", "--fix", "train.py")
    assert result.exit_code == 2
    assert "train.py: error: cannot write fixes: No space left on device" in result.stderr
    assert path.read_text() == BUGGY
    assert "train.py:3:5: ACC001" in result.stdout  # reported as it still is
    assert sorted(p.name for p in project.iterdir() if p.name != ".accumlint_cache") == [".git", "train.py"]
    monkeypatch.setattr(accumlint.writer.os, "replace", real_replace)  # not cached: the next run fixes it
    assert invoke("check", "--fix", "train.py").exit_code == 0
    assert "(loss / accum_steps).backward()" in path.read_text()


def test_syntax_error_file_is_never_written(project, invoke):
    path = project / "bad.py"
    path.write_bytes(b"loss.backward()\ndef (:\n")
    result = invoke("check", "--fix", "bad.py")
    assert result.exit_code == 2
    assert path.read_bytes() == b"loss.backward()\ndef (:\n"


def test_notebooks_are_found_checked_and_fixed_cell_by_cell(project, invoke):
    import json

    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
             "source": BUGGY.splitlines(keepends=True)},
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = project / "train.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    result = invoke("check", "--no-cache", ".")
    assert result.exit_code == 1
    assert "train.ipynb:cell 2:3:5: ACC001" in result.stdout
    fixed = invoke("check", "--fix", "train.ipynb")
    assert fixed.exit_code == 0, fixed.stdout + fixed.stderr
    cell = json.loads(path.read_text())["cells"][1]
    assert "".join(cell["source"]) == FIXED
