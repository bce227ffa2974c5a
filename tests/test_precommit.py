"""The pre-commit hooks: one real `pre-commit try-repo` against a snapshot of this working tree,
and the rest in-process (the hook entries run through click, as pre-commit would run them)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pre_commit.clientlib import load_manifest

from cli_samples import BUGGY, CLEAN

ROOT = Path(__file__).resolve().parent.parent
HOOKS_FILE = ROOT / ".pre-commit-hooks.yaml"
PRE_COMMIT = str(Path(sys.executable).with_name("pre-commit"))
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load(HOOKS_FILE.read_text())}


def test_manifest_is_valid_for_pre_commit_and_runs_serially():
    manifest = load_manifest(str(HOOKS_FILE))  # pre-commit's own schema check
    assert {hook["id"] for hook in manifest} == {"accumlint", "accumlint-fix"}
    for hook in _hooks().values():
        # One process for all the staged files: one summary, never "Found 4 errors." and then
        # "All checks passed!" from a second batch.
        assert hook["require_serial"] is True
        assert "--force-exclude" in shlex.split(hook["entry"])
        assert set(hook["types_or"]) == {"python", "jupyter"}


@pytest.fixture
def run_hook(invoke):
    """Run a hook's entry in-process with the file names pre-commit would append."""

    def run(hook_id: str, *files: str):
        entry = shlex.split(_hooks()[hook_id]["entry"])
        assert entry[0] == "accumlint"
        return invoke(*entry[1:], *files)

    return run


@pytest.mark.usefixtures("fake_rules")
def test_check_hook_fails_on_bugs_and_passes_clean_files(project, run_hook):
    (project / "bad.py").write_text(BUGGY)
    (project / "clean.py").write_text("x = 1\n")
    failing = run_hook("accumlint", "bad.py", "clean.py")
    assert failing.exit_code == 1 and "bad.py:3:5: ACC001" in failing.stdout
    assert run_hook("accumlint", "clean.py").exit_code == 0


@pytest.mark.usefixtures("fake_rules")
def test_hooks_honour_exclude_and_gitignore_for_named_files(project, run_hook):
    (project / "pyproject.toml").write_text('[tool.accumlint]\nexclude = ["legacy/"]\n')
    (project / ".gitignore").write_text("generated_*.py\n")
    for name in ("legacy/old.py", "generated_model.py"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(BUGGY)
    for hook in ("accumlint", "accumlint-fix"):
        result = run_hook(hook, "legacy/old.py", "generated_model.py")
        assert result.exit_code == 0 and "ACC001" not in result.stdout
    assert (project / "legacy" / "old.py").read_text() == BUGGY


@pytest.mark.usefixtures("fake_rules")
def test_fix_hook_fixes_and_a_second_run_passes(project, run_hook):
    (project / "bad.py").write_text(BUGGY)
    assert run_hook("accumlint-fix", "bad.py").exit_code == 0
    assert "(loss / accum_steps).backward()" in (project / "bad.py").read_text()
    assert run_hook("accumlint", "bad.py").exit_code == 0


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _snapshot(dest: Path) -> None:
    """Commit the current working tree (tracked and untracked, minus ignored) into a new repo:
    try-repo installs from a commit, and this must test what is here, not the last commit."""
    listed = _git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    _git(dest, "init", "-q")
    _git(dest, "add", ".")
    _git(dest, "commit", "-q", "-m", "snapshot")


def test_real_try_repo_runs_both_hooks_serially(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    _snapshot(hooks)
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "pyproject.toml").write_text('[tool.accumlint]\nexclude = ["legacy/"]\n')
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(BUGGY)
    names = [f"m{index:02d}.py" for index in range(12)]  # enough for pre-commit to batch, were it allowed
    for name in names:
        (project / name).write_text(CLEAN)
    (project / "bad.py").write_text(BUGGY)
    _git(project, "add", ".")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop("PYTHONPATH", None)

    def try_repo(hook: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PRE_COMMIT, "try-repo", str(hooks), hook, "--all-files", "--verbose"],
            cwd=project, env=env, capture_output=True, text=True, timeout=600,
        )

    failing = try_repo("accumlint")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "bad.py:3:5: ACC001" in failing.stdout
    assert "legacy/old.py" not in failing.stdout  # excluded although pre-commit named it
    assert failing.stdout.count("Found 2 errors.") == 1  # ACC001 and ACC005, in one summary
    assert "All checks passed!" not in failing.stdout

    fixing = try_repo("accumlint-fix")
    assert fixing.returncode == 1  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixing.stdout
    assert "(loss / accum_steps).backward()" in (project / "bad.py").read_text()
    assert (project / "legacy" / "old.py").read_text() == BUGGY
