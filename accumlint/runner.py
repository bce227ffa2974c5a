"""The one runner: every file that `check` (plain, --fix, --diff, stdin) or the language server
looks at goes through `run`, which reads it, consults the content-hash cache, and spreads the
misses over worker processes; accumlint.checking does the per-file work.

Results come back sorted by filename whatever the number of jobs, so output is deterministic.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from accumlint.analysis.facts import forget_module_caches
from accumlint.checking import Mode, Outcome, process
from accumlint.model import FileError, FileResult
from accumlint.parallel import default_jobs, map_files, read_source

if TYPE_CHECKING:
    from accumlint.cache import Cache

CacheFor = Callable[[frozenset[str]], "Cache"]  # the cache for one rule selection


@dataclass(frozen=True)
class Task:
    """One file to check with its own selection (per-file-ignores give files different ones).
    `data` is given for text that is not (or not yet) on disk: stdin, an editor's buffer."""

    filename: str
    select: frozenset[str]
    data: Optional[bytes] = None


def _process_chunk(chunk: list[tuple[str, bytes, frozenset[str]]], mode: Mode) -> list[Outcome]:
    # Top level and plain arguments: picklable under spawn and forkserver.
    outcomes = []
    for filename, data, select in chunk:
        outcomes.append(process(filename, data, select, mode))
        _settle_garbage()
    return outcomes


def _settle_garbage() -> None:
    """Free what the last file's analysis left (its scopes and statements point at each other),
    then set aside what survives (the project modules it read, kept for the next files): the
    collector then never walks those again, where it spent a third of a whole-repository run."""
    forget_module_caches()
    gc.collect()
    gc.freeze()


def _cacheable(outcome: Outcome) -> bool:
    # A syntax error is a property of the bytes and worth caching; an internal error or a failed
    # write is not.
    # When fixing, only a file that the fixer left alone is cached: its entry then says "nothing
    # to fix, and here is what remains", which holds for the same bytes next time.
    if not outcome.cacheable:
        return False
    return not outcome.diff and outcome.fixed is None and outcome.result.fixes_applied == 0


def cache_factory(root: Path, mode: Mode) -> CacheFor:
    """Caches under `root`, one fingerprint per selection, for this mode."""
    from accumlint import cache as result_cache

    made: dict[frozenset[str], Cache] = {}

    def for_codes(codes: frozenset[str]) -> Cache:
        if codes not in made:
            made[codes] = result_cache.Cache(root, result_cache.fingerprint(codes, mode.cache_kind))
        return made[codes]

    return for_codes


def run(
    tasks: Iterable[Task], mode: Mode, jobs: Optional[int] = None, caches: Optional[CacheFor] = None
) -> list[Outcome]:
    """One Outcome per file (a filename given twice is checked once), sorted by filename.

    `jobs`: worker processes (None: the usable cores). `caches`: the cache for a selection, or
    None for no cache. Text given in a Task is never cached (an editor's buffer changes on every
    keystroke; the entries would only crowd out the files on disk)."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    unique: dict[str, Task] = {}
    for task in tasks:
        unique.setdefault(os.fspath(task.filename), task)
    outcomes: dict[str, Outcome] = {}
    work: list[tuple[str, bytes, frozenset[str]]] = []
    keys: dict[str, tuple[Cache, str]] = {}
    for name in sorted(unique):
        task = unique[name]
        data = task.data if task.data is not None else read_source(name)
        if isinstance(data, FileError):
            outcomes[name] = Outcome(FileResult(name, error=data))
            continue
        if caches is not None and task.data is None:
            store = caches(task.select)
            key = store.key(data)
            keys[name] = (store, key)
            hit = store.get(key, name)
            if hit is not None:
                outcomes[name] = Outcome(hit)
                continue
        work.append((name, data, task.select))
    fresh = map_files(_process_chunk, work, mode, jobs, done=lambda outcome: outcome.result.filename)
    for outcome in fresh:
        name = outcome.result.filename
        outcomes[name] = outcome
        if name in keys and _cacheable(outcome):
            store, key = keys[name]
            store.put(key, outcome.result)
    pruned: set[int] = set()
    for name in (o.result.filename for o in fresh if o.result.filename in keys):
        store, key = keys[name]
        if id(store) not in pruned:
            pruned.add(id(store))
            store.maybe_prune(key[:2])
    return [outcomes[name] for name in sorted(unique)]
