"""Reading files to check, and spreading work over processes.

accumlint.runner decides what to run; this module reads the bytes (naming one cause when it
cannot) and runs chunks of work in a process pool, falling back to this process when a pool
cannot start or breaks. Small runs (fewer than IN_PROCESS_BELOW files to analyse, or jobs == 1)
stay in this process: starting workers costs more than checking a handful of files, and
pre-commit already runs hooks side by side.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import stat
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Optional, Sequence, TypeVar, Union

from accumlint.model import FileError, FileResult
from accumlint.registry import RULES

if TYPE_CHECKING:
    from accumlint.cache import Cache

ALL_CODES = frozenset(RULES)
Item = TypeVar("Item", bound=tuple)  # type: ignore[type-arg]
Result = TypeVar("Result")

MAX_FILE_BYTES = 10 * 1024 * 1024  # bigger files are refused: generated code, data, not scripts
IN_PROCESS_BELOW = 8
CHUNKS_PER_JOB = 4  # several chunks per worker even out files of very different sizes

PathLike = Union[str, "os.PathLike[str]"]


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))  # honours taskset and container CPU sets
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def read_source(filename: str) -> Union[bytes, FileError]:
    """The file's bytes, or a FileError whose message names one cause."""
    try:
        with open(filename, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                return FileError(filename, "is a directory")
            if not stat.S_ISREG(info.st_mode):
                return FileError(filename, "not a regular file")
            if info.st_size > MAX_FILE_BYTES:
                return FileError(filename, f"too large to check ({info.st_size} bytes, limit {MAX_FILE_BYTES})")
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        if os.path.islink(filename):
            return FileError(filename, "broken symbolic link (its target does not exist)")
        return FileError(filename, "no such file")
    except IsADirectoryError:
        return FileError(filename, "is a directory")
    except PermissionError:
        return FileError(filename, "permission denied")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return FileError(filename, "symbolic link loop")
        return FileError(filename, f"cannot read: {exc.strerror or exc}")
    if len(data) > MAX_FILE_BYTES:  # grew while we read it, or st_size lied (procfs)
        return FileError(filename, f"too large to check (over {MAX_FILE_BYTES} bytes)")
    if b"\0" in data and not filename.endswith(".ipynb"):
        return FileError(filename, "binary file (contains NUL bytes; UTF-16 is not supported)")
    return data


def _chunks(items: Sequence[Item], count: int) -> list[list[Item]]:
    """Deal work items (whose second field is the file's bytes), biggest first, into `count`
    chunks of similar total size."""
    ordered = sorted(items, key=lambda item: len(item[1]), reverse=True)
    chunks: list[list[Item]] = [[] for _ in range(count)]
    sizes = [0] * count
    for item in ordered:
        smallest = sizes.index(min(sizes))
        chunks[smallest].append(item)
        sizes[smallest] += len(item[1])
    return [chunk for chunk in chunks if chunk]


def _pool_context() -> BaseContext:
    # forkserver: workers fork from a clean server with the checker imported once, and never
    # inherit this process's threads; spawn where fork is not available (Windows, macOS default).
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["accumlint.checking"])
        return context
    return multiprocessing.get_context("spawn")


def _run_pool(
    function: Callable[[list[Item], Any], list[Result]], work: list[Item], argument: Any, jobs: int,
    done: Callable[[Result], str],
) -> list[Result]:
    """`function(chunk, argument)` over chunks of `work` in worker processes. `done` names the
    item a result belongs to, so what a broken pool did not return is finished here."""
    chunks = _chunks(work, min(len(work), jobs * CHUNKS_PER_JOB))
    results: list[Result] = []
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=_pool_context()) as pool:
            for chunk_results in pool.map(function, chunks, [argument] * len(chunks)):
                results.extend(chunk_results)
    except (BrokenProcessPool, OSError, RuntimeError):
        # A worker died (out of memory, killed) or processes cannot start here (sandbox):
        # finish in this process what the pool did not return.
        finished = {done(result) for result in results}
        results.extend(function([item for item in work if item[0] not in finished], argument))
    return results


def map_files(
    function: Callable[[list[Item], Any], list[Result]], work: list[Item], argument: Any, jobs: int,
    done: Callable[[Result], str],
) -> list[Result]:
    """Run `function` over the work items, in this process or in a pool (see the module doc)."""
    if len(work) < IN_PROCESS_BELOW or jobs <= 1:
        return function(work, argument)
    return _run_pool(function, work, argument, jobs, done)


def check_files(
    paths: Iterable[PathLike],
    select: Collection[str] = ALL_CODES,
    jobs: Optional[int] = None,
    cache: Optional[Cache] = None,
    with_edits: bool = True,
) -> list[FileResult]:
    """Check every path; one FileResult per path (duplicates merged), sorted by filename.
    The runner's check mode, for callers that want only the results."""
    from accumlint.checking import Mode
    from accumlint.runner import Task, run

    codes = frozenset(select)
    tasks = [Task(os.fspath(path), codes) for path in paths]
    caches = None if cache is None else (lambda _codes: cache)
    return [outcome.result for outcome in run(tasks, Mode(with_edits=with_edits), jobs=jobs, caches=caches)]
