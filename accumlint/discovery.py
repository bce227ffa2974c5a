"""Turn the command line's paths into the files to check."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from accumlint.config import Resolver
from accumlint.model import FileError

# File kinds found when walking folders. A file named on the command line is checked whatever
# its suffix, as ruff does (read as Python unless it is a notebook).
SUFFIXES = (".py", ".ipynb")

# Folders never worth walking into: VCS data, virtual environments, caches, build output.
# They are still checked when named on the command line.
SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__",
        "__pypackages__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".accumlint_cache",
        ".ipynb_checkpoints", "node_modules", "site-packages", "build", "dist", "_build",
        "buck-out", ".direnv", ".pytype",
    }
)


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)  # display paths, sorted, each once
    errors: list[FileError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: why", said with --verbose


def _skip_dir(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


def discover(paths: Sequence[str], resolver: Resolver) -> Discovery:
    found = Discovery()
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key in seen:
            return
        seen.add(key)
        if resolver.for_path(path).excludes(path):
            found.skipped.append(f"{path}: excluded by configuration")
        else:
            found.files.append(path)

    for raw in paths:
        path = os.path.normpath(raw)
        if not os.path.lexists(path):
            found.errors.append(FileError(raw, "No such file or directory"))
        elif os.path.isdir(path):
            if resolver.for_path(path).excludes(path) and path != os.curdir:
                found.skipped.append(f"{path}: excluded by configuration")
                continue
            for root, dirs, names in os.walk(path):
                # Prune in place so os.walk never descends into skipped or excluded folders.
                dirs[:] = sorted(
                    d for d in dirs
                    if not _skip_dir(d) and not resolver.for_path(os.path.join(root, d)).excludes(os.path.join(root, d))
                )
                for name in sorted(names):
                    if name.endswith(SUFFIXES):
                        add(os.path.normpath(os.path.join(root, name)))
        else:
            add(path)
    found.files.sort()
    return found
