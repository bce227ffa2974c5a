"""The command on the real rules (ACC001, ACC005): what a user sees on the issue's example."""

from __future__ import annotations

import json

from cli_samples import BUGGY, CLEAN


def test_buggy_loop_reports_acc001_and_acc005(project, invoke):
    (project / "train.py").write_text(BUGGY)
    result = invoke("check", "--no-cache", "--format", "json", "train.py")
    assert result.exit_code == 1
    found = [(d["code"], d["location"]["row"]) for d in json.loads(result.stdout)]
    assert ("ACC001", 3) in found
    assert ("ACC005", 4) in found


def test_clean_loop_passes(project, invoke):
    (project / "train.py").write_text(CLEAN)
    result = invoke("check", "--no-cache", "train.py")
    assert (result.exit_code, result.stdout) == (0, "All checks passed!\n")


def test_fix_then_check_is_clean_and_fix_is_idempotent(project, invoke):
    path = project / "train.py"
    path.write_text(BUGGY)
    first = invoke("check", "--no-cache", "--fix", "train.py")
    assert first.exit_code == 0, first.stdout
    fixed = path.read_text()
    assert "(loss / accum_steps).backward()" in fixed
    assert "or i + 1 == len(loader)" in fixed
    assert invoke("check", "--no-cache", "train.py").exit_code == 0
    invoke("check", "--no-cache", "--fix", "train.py")
    assert path.read_text() == fixed


def test_cache_gives_the_same_answer_twice(project, invoke):
    (project / "train.py").write_text(BUGGY)
    first = invoke("check", "train.py")
    second = invoke("check", "train.py")
    assert first.exit_code == second.exit_code == 1
    assert first.stdout == second.stdout
    assert (project / ".accumlint_cache").is_dir()
