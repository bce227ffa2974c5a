"""Which paths git ignores: the `.gitignore` files from the repository root down to a path's
folder, and `.git/info/exclude`, read with pathspec's gitignore semantics (a deeper file's
pattern, and a later one in the same file, wins; `!pattern` re-includes).

Outside a git repository nothing is ignored, as with ruff (and git itself).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Optional

import pathspec


@lru_cache(maxsize=None)
def _repository_root(folder: str) -> Optional[str]:
    if os.path.exists(os.path.join(folder, ".git")):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _repository_root(parent)


@lru_cache(maxsize=None)
def _spec(path: str) -> Optional[pathspec.GitIgnoreSpec]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


class GitIgnore:
    """Gitignore verdicts; the ignore files are read once each."""

    def ignored(self, path: str) -> bool:
        """Whether git ignores `path` or any folder above it (for a path named by the user)."""
        path = os.path.abspath(path)
        root = _repository_root(os.path.dirname(path))
        if root is None or path == root:
            return False
        parts = os.path.relpath(path, root).split(os.sep)
        for depth in range(1, len(parts) + 1):
            target = os.path.join(root, *parts[:depth])
            if self.ignored_entry(target, os.path.isdir(target) if depth == len(parts) else True):
                return True
        return False

    def ignored_entry(self, path: str, is_dir: bool) -> bool:
        """Whether the patterns ignore `path` itself (its folders are taken as not ignored: the
        walk never enters an ignored one)."""
        path = os.path.abspath(path)
        root = _repository_root(os.path.dirname(path))
        if root is None:
            return False
        folders = [root]
        rel_folder = os.path.relpath(os.path.dirname(path), root)
        if rel_folder != os.curdir:
            for part in rel_folder.split(os.sep):
                folders.append(os.path.join(folders[-1], part))
        sources = [(root, os.path.join(root, ".git", "info", "exclude"))]
        sources += [(folder, os.path.join(folder, ".gitignore")) for folder in folders]
        verdict: Optional[bool] = None
        for base, ignore_file in sources:
            spec = _spec(ignore_file)
            if spec is None:
                continue
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)
