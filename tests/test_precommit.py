"""A real `pre-commit try-repo` against a snapshot of this working tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cli_samples import BUGGY, CLEAN

ROOT = Path(__file__).resolve().parent.parent
PRE_COMMIT = str(Path(sys.executable).with_name("pre-commit"))
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


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


def test_hooks_fail_on_bugs_pass_clean_files_and_fix(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    _snapshot(hooks)
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "bad.py").write_text(BUGGY)
    (project / "clean.py").write_text(CLEAN)
    _git(project, "add", ".")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop("PYTHONPATH", None)

    def try_repo(hook: str, *files: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PRE_COMMIT, "try-repo", str(hooks), hook, "--files", *files],
            cwd=project, env=env, capture_output=True, text=True, timeout=600,
        )

    failing = try_repo("accumlint", "bad.py")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "bad.py:3:5: ACC001" in failing.stdout

    passing = try_repo("accumlint", "clean.py")
    assert passing.returncode == 0, passing.stdout + passing.stderr

    fixing = try_repo("accumlint-fix", "bad.py")
    assert fixing.returncode == 1  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixing.stdout
    assert "(loss / accum_steps).backward()" in (project / "bad.py").read_text()
    _git(project, "add", "bad.py")
    assert try_repo("accumlint", "bad.py").returncode == 0
