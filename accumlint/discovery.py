"""Turn the command line's paths into the files to check.

Walking a folder skips what git ignores (`.gitignore`), the configuration's `exclude` patterns,
and folders never worth entering (virtual environments, caches). A path named on the command
line is checked as given, as ruff does, unless `force_exclude` (what pre-commit hooks pass, since
pre-commit names every staged file) applies the excludes and `.gitignore` to it too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional, Sequence

from accumlint.config import Config, Resolver, matches
from accumlint.gitignore import GitIgnore
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
    warnings: list[str] = field(default_factory=list)  # patterns that matched nothing


def skipped_dir(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(".egg-info")


class _Walk:
    def __init__(self, resolver: Resolver, force_exclude: bool, respect_gitignore: bool) -> None:
        self.resolver = resolver
        self.force_exclude = force_exclude
        self.gitignore = GitIgnore() if respect_gitignore else None
        self.found = Discovery()
        self.seen: set[str] = set()
        # Which configured patterns matched something, and which configs were walked whole.
        self.matched: set[tuple[str, str, str]] = set()
        self.covered: dict[str, Config] = {}

    def _note_patterns(self, path: str, config: Config) -> None:
        rel = config.relative(path)
        if rel is None or config.source is None:
            return
        for key, pattern in config.patterns():
            if (config.source, key, pattern) not in self.matched and matches(rel, pattern, os.path.isdir(path)):
                self.matched.add((config.source, key, pattern))

    def _excluded(self, path: str, is_dir: bool, explicit: bool, use_config: bool = True) -> Optional[str]:
        """Why `path` is skipped, or None. Named paths only with force_exclude."""
        if explicit and not self.force_exclude:
            return None
        pattern = self.resolver.for_path(path).excluded_by(path) if use_config else None
        if pattern is not None:
            return f"excluded by configuration ({pattern!r})"
        if self.gitignore is not None:
            ignored = self.gitignore.ignored(path) if explicit else self.gitignore.ignored_entry(path, is_dir)
            if ignored:
                return "ignored by .gitignore"
        return None

    def add(self, path: str, explicit: bool, use_config: bool = True) -> None:
        key = os.path.normcase(os.path.abspath(path))
        if key in self.seen:
            return
        self.seen.add(key)
        self._note_patterns(path, self.resolver.for_path(path))
        why = self._excluded(path, False, explicit, use_config)
        if why:
            self.found.skipped.append(f"{path}: {why}")
        else:
            self.found.files.append(path)

    def walk(self, top: str, use_config: bool = True) -> None:
        """`use_config` False: a folder named on the command line that `exclude` matches is
        still walked (without --force-exclude), so what is below it is not excluded either."""
        self._note_covered(top)
        for root, dirs, names in os.walk(top):
            kept = []
            for name in sorted(dirs):
                child = os.path.join(root, name)
                if skipped_dir(name):
                    continue
                self._note_patterns(child, self.resolver.for_path(child))
                why = self._excluded(child, True, explicit=False, use_config=use_config)
                if why:
                    self.found.skipped.append(f"{os.path.normpath(child)}: {why}")
                    continue
                kept.append(name)
                self._note_covered(child)
            dirs[:] = kept  # prune in place: os.walk never enters skipped folders
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    self.add(os.path.normpath(os.path.join(root, name)), explicit=False, use_config=use_config)

    def _note_covered(self, folder: str) -> None:
        # A config whose folder is walked whole can be told that one of its patterns is unused.
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            config = self.resolver.for_path(candidate)
            if config.source and os.path.samefile(config.root, folder):
                self.covered[config.source] = config

    def unused_patterns(self) -> list[str]:
        lines = []
        for source, config in sorted(self.covered.items()):
            for key, pattern in config.patterns():
                if (source, key, pattern) not in self.matched:
                    lines.append(f"warning: {source}: [tool.accumlint] {key} pattern {pattern!r} matches no "
                                 "file or folder (patterns are gitignore-style, relative to this file's folder)")
        return lines


def forced_exclusion(path: str, resolver: Resolver, respect_gitignore: bool = True) -> Optional[str]:
    """Why --force-exclude skips `path` (which need not exist: --stdin-filename), or None."""
    return _Walk(resolver, True, respect_gitignore)._excluded(path, False, explicit=True)


def discover(
    paths: Sequence[str], resolver: Resolver, force_exclude: bool = False, respect_gitignore: bool = True
) -> Discovery:
    walk = _Walk(resolver, force_exclude, respect_gitignore)
    found = walk.found
    for raw in paths:
        path = os.path.normpath(raw)
        if not os.path.lexists(path):
            found.errors.append(FileError(raw, "No such file or directory"))
        elif os.path.isdir(path):
            why = walk._excluded(path, True, explicit=True) if path != os.curdir else None
            if why:
                found.skipped.append(f"{path}: {why}")
                continue
            named_but_excluded = path != os.curdir and resolver.for_path(path).excludes(path)
            walk.walk(path, use_config=not named_but_excluded)
        else:
            walk.add(path, explicit=True)
    found.files.sort()
    found.warnings = walk.unused_patterns()
    return found
