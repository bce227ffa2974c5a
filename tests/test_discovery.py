"""gitignore verdicts (accumlint.gitignore) and what discovery does with them."""

from __future__ import annotations

from accumlint.config import Resolver
from accumlint.discovery import discover
from accumlint.gitignore import GitIgnore


def _touch(root, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n")


def test_ignore_files_at_every_level_and_info_exclude(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.py\n")
    (tmp_path / ".gitignore").write_text("checkpoints/\n*.tmp.py\n!keep.tmp.py\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ".gitignore").write_text("/local.py\n")
    _touch(tmp_path, "scratch.py", "checkpoints/a.py", "b.tmp.py", "keep.tmp.py", "src/local.py",
           "src/deeper/local.py", "src/train.py")
    ignore = GitIgnore()
    verdicts = {name: ignore.ignored(str(tmp_path / name)) for name in (
        "scratch.py", "checkpoints/a.py", "b.tmp.py", "keep.tmp.py", "src/local.py", "src/deeper/local.py",
        "src/train.py")}
    assert verdicts == {"scratch.py": True, "checkpoints/a.py": True, "b.tmp.py": True, "keep.tmp.py": False,
                        "src/local.py": True, "src/deeper/local.py": False, "src/train.py": False}
    found = discover([str(tmp_path)], Resolver(cwd=str(tmp_path)))
    assert sorted(f[len(str(tmp_path)) + 1:] for f in found.files) == [
        "keep.tmp.py", "src/deeper/local.py", "src/train.py"]


def test_outside_a_repository_nothing_is_ignored(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n")
    _touch(tmp_path, "a.py")
    assert not GitIgnore().ignored(str(tmp_path / "a.py"))
    assert len(discover([str(tmp_path)], Resolver(cwd=str(tmp_path))).files) == 1
