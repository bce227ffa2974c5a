"""`[tool.accumlint]` in pyproject.toml: find it, validate it, and say which rules apply to a file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Iterable, Optional

import pathspec

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from accumlint.registry import RULES, resolve_selection

KEYS = ("select", "ignore", "exclude", "per-file-ignores")


class ConfigError(Exception):
    """A configuration that cannot be used; str() is one line naming the file and the key."""


@dataclass(frozen=True)
class Config:
    root: str  # the directory that `exclude` and `per-file-ignores` patterns are relative to
    source: Optional[str] = None  # the file it came from; None for the built-in defaults
    select: Optional[frozenset[str]] = None
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()

    def excludes(self, path: str) -> bool:
        return self.excluded_by(path) is not None

    def excluded_by(self, path: str) -> Optional[str]:
        """The first `exclude` pattern that matches `path` (a file or a folder), or None."""
        rel = self.relative(path)
        if rel is None:
            return None
        is_dir = os.path.isdir(path)
        return next((pattern for pattern in self.exclude if matches(rel, pattern, is_dir)), None)

    def ignored_for(self, path: str) -> frozenset[str]:
        rel = self.relative(path)
        codes: set[str] = set()
        for pattern, ignored in self.per_file_ignores:
            if rel is not None and matches(rel, pattern):
                codes |= ignored
        return frozenset(codes)

    def patterns(self) -> list[tuple[str, str]]:
        """(key, pattern) of every path pattern, to tell which of them matched nothing."""
        return [("exclude", p) for p in self.exclude] + [("per-file-ignores", p) for p, _ in self.per_file_ignores]

    def relative(self, path: str) -> Optional[str]:
        """`path` relative to the config's folder, with forward slashes; None when outside it
        (a pattern of this config says nothing about such a path)."""
        rel = os.path.relpath(os.path.abspath(path), self.root)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return None
        return PurePosixPath(*rel.split(os.sep)).as_posix()


@dataclass(frozen=True)
class Selection:
    """The command line's --select/--ignore, layered over a file's configuration like ruff:
    a `select` starts the set afresh (dropping earlier layers' ignores), an `ignore` removes."""

    select: Optional[frozenset[str]] = None
    ignore: frozenset[str] = frozenset()

    def codes_for(self, path: str, config: Config) -> frozenset[str]:
        codes = set(RULES)
        for select, ignore in ((config.select, config.ignore), (self.select, self.ignore)):
            if select is not None:
                codes = set(select)
            codes -= ignore
        return frozenset(codes - config.ignored_for(path))


@lru_cache(maxsize=None)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec:
    pattern = pattern.strip()
    if pattern.startswith("./"):  # "./legacy" reads as "legacy at the root", like "/legacy"
        pattern = "/" + pattern[2:]
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def matches(rel: str, pattern: str, is_dir: bool = False) -> bool:
    """A gitignore-style pattern against a path relative to the config's folder: `legacy`
    matches that name at any depth (and everything below it), `/legacy` only at the root,
    `a/**/b` also `a/b`, `*.ipynb` any notebook."""
    return rel != "." and _spec(pattern).match_file(rel + "/" if is_dir else rel)


# -- reading -----------------------------------------------------------------------------------


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: error: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: error: cannot read: {exc.strerror or exc}") from None


def _table(document: dict[str, Any]) -> Optional[Any]:
    tool = document.get("tool")
    return tool.get("accumlint") if isinstance(tool, dict) else None


def _string_list(path: str, key: str, value: Any) -> list[str]:
    if isinstance(value, str):  # a lone string is a common slip; accept it as a list of one
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: error: [tool.accumlint] {key}: expected a list of strings")
    return value


def _codes(path: str, key: str, value: Any) -> frozenset[str]:
    try:
        return frozenset(resolve_selection(_string_list(path, key, value)))
    except ValueError as exc:
        raise ConfigError(f"{path}: error: [tool.accumlint] {key}: {exc}") from None


def parse_table(table: Any, path: str) -> Config:
    """Validate one `[tool.accumlint]` table (or a bare accumlint.toml document)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: error: [tool.accumlint] must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: error: [tool.accumlint] {unknown[0]}: unknown key (expected one of: {', '.join(KEYS)})"
        )
    per_file: list[tuple[str, frozenset[str]]] = []
    raw_per_file = table.get("per-file-ignores", {})
    if not isinstance(raw_per_file, dict):
        raise ConfigError(f"{path}: error: [tool.accumlint] per-file-ignores: expected a table of glob = [codes]")
    for pattern, codes in raw_per_file.items():
        per_file.append((pattern, _codes(path, f"per-file-ignores.{pattern!r}", codes)))
    return Config(
        root=os.path.dirname(os.path.abspath(path)),
        source=path,
        select=_codes(path, "select", table["select"]) if "select" in table else None,
        ignore=_codes(path, "ignore", table.get("ignore", [])),
        exclude=tuple(_string_list(path, "exclude", table.get("exclude", []))),
        per_file_ignores=tuple(per_file),
    )


def load_file(path: str) -> Config:
    """An explicit --config FILE: a pyproject.toml's `[tool.accumlint]`, or a whole TOML file."""
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: error: config file not found")
    document = _read_toml(path)
    table = _table(document)
    if table is None:
        if os.path.basename(path) == "pyproject.toml":
            raise ConfigError(f"{path}: error: no [tool.accumlint] table")
        table = document
    return parse_table(table, path)


class Resolver:
    """Finds the configuration for each path: an explicit file, or the nearest pyproject.toml
    with a [tool.accumlint] table, walking up no further than the project root (a `.git`)."""

    def __init__(self, explicit: Optional[str] = None, cwd: Optional[str] = None) -> None:
        self._explicit = load_file(explicit) if explicit else None
        self._default = Config(root=os.path.abspath(cwd or os.getcwd()))
        self._by_dir: dict[str, Config] = {}

    def for_path(self, path: str) -> Config:
        if self._explicit is not None:
            return self._explicit
        path = os.path.abspath(path)
        start = path if os.path.isdir(path) else os.path.dirname(path)
        return self._for_dir(start)

    def _for_dir(self, directory: str) -> Config:
        seen: list[str] = []
        found: Optional[Config] = None
        current = directory
        while True:
            if current in self._by_dir:
                found = self._by_dir[current]
                break
            seen.append(current)
            candidate = os.path.join(current, "pyproject.toml")
            if os.path.isfile(candidate):
                table = _table(_read_toml(candidate))
                if table is not None:
                    found = parse_table(table, candidate)
                    break
            parent = os.path.dirname(current)
            if os.path.exists(os.path.join(current, ".git")) or parent == current:
                break
            current = parent
        config = found or self._default
        for directory_seen in seen:
            self._by_dir[directory_seen] = config
        return config

    def sources(self) -> Iterable[str]:
        configs = [self._explicit] if self._explicit else self._by_dir.values()
        return sorted({c.source for c in configs if c is not None and c.source})
