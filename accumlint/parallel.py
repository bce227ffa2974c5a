"""Check many files: read them, consult the cache, spread the misses over processes.

Results come back sorted by filename whatever the number of jobs, so output is deterministic.
Small runs (fewer than IN_PROCESS_BELOW files to analyse, or jobs == 1) stay in this process:
starting workers costs more than checking a handful of files, and pre-commit already runs
hooks side by side.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import stat
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Collection, Iterable, Optional, Union

from accumlint.registry import RULES
from accumlint.model import FileError, FileResult

ALL_CODES = frozenset(RULES)


def check_source(*args, **kwargs) -> FileResult:
    """The engine, imported on first use: a run whose files all hit the cache never loads LibCST."""
    from accumlint.engine import check_source as engine_check

    return engine_check(*args, **kwargs)

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


def check_bytes(data: bytes, filename: str, select: Collection[str], with_edits: bool = True) -> FileResult:
    """One file's check; a notebook goes cell by cell. Never raises."""
    try:
        if filename.endswith(".ipynb"):
            from accumlint.notebook import check_notebook

            return check_notebook(data, filename, select).as_file_result()
        return check_source(data, filename, select, with_edits)
    except RecursionError:
        return FileResult(filename, error=FileError(filename, "expression nested too deeply to check"))
    except Exception as exc:  # an accumlint bug must cost one file, not the run
        message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        return FileResult(filename, error=FileError(filename, message))


def _check_chunk(
    chunk: list[tuple[str, bytes]], select: frozenset[str], with_edits: bool = True
) -> list[FileResult]:
    # Top level and plain arguments: picklable under spawn and forkserver.
    return [check_bytes(data, filename, select, with_edits) for filename, data in chunk]


def _chunks(items: list[tuple[str, bytes]], count: int) -> list[list[tuple[str, bytes]]]:
    """Deal files, biggest first, into `count` chunks of similar total size."""
    ordered = sorted(items, key=lambda item: len(item[1]), reverse=True)
    chunks: list[list[tuple[str, bytes]]] = [[] for _ in range(count)]
    sizes = [0] * count
    for item in ordered:
        smallest = sizes.index(min(sizes))
        chunks[smallest].append(item)
        sizes[smallest] += len(item[1])
    return [chunk for chunk in chunks if chunk]


def _pool_context():
    # forkserver: workers fork from a clean server with the engine imported once, and never
    # inherit this process's threads; spawn where fork is not available (Windows, macOS default).
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["accumlint.parallel"])
        return context
    return multiprocessing.get_context("spawn")


def _run_pool(
    work: list[tuple[str, bytes]], select: frozenset[str], jobs: int, with_edits: bool = True
) -> list[FileResult]:
    chunks = _chunks(work, min(len(work), jobs * CHUNKS_PER_JOB))
    results: list[FileResult] = []
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=_pool_context()) as pool:
            for chunk_results in pool.map(_check_chunk, chunks, [select] * len(chunks), [with_edits] * len(chunks)):
                results.extend(chunk_results)
    except (BrokenProcessPool, OSError, RuntimeError):
        # A worker died (out of memory, killed) or processes cannot start here (sandbox):
        # finish in this process what the pool did not return.
        done = {result.filename for result in results}
        results.extend(_check_chunk([item for item in work if item[0] not in done], select, with_edits))
    return results


def check_files(
    paths: Iterable[PathLike],
    select: Collection[str] = ALL_CODES,
    jobs: Optional[int] = None,
    cache=None,
    with_edits: bool = True,
) -> list[FileResult]:
    """Check every path; one FileResult per path (duplicates merged), sorted by filename.

    `jobs`: worker processes (None: the usable cores). `cache`: an accumlint.cache.Cache or None.
    """
    jobs = default_jobs() if jobs is None else max(1, jobs)
    select = frozenset(select)
    names = sorted({os.fspath(path) for path in paths})
    results: dict[str, FileResult] = {}
    work: list[tuple[str, bytes]] = []
    keys: dict[str, str] = {}
    for name in names:
        data = read_source(name)
        if isinstance(data, FileError):
            results[name] = FileResult(name, error=data)
            continue
        if cache is not None:
            keys[name] = cache.key(data)
            hit = cache.get(keys[name], name)
            if hit is not None:
                results[name] = hit
                continue
        work.append((name, data))
    if len(work) < IN_PROCESS_BELOW or jobs == 1:
        fresh = _check_chunk(work, select, with_edits)
    else:
        fresh = _run_pool(work, select, jobs, with_edits)
    for result in fresh:
        results[result.filename] = result
        if cache is not None and _cacheable(result):
            cache.put(keys[result.filename], result)
    if cache is not None and fresh:
        cache.maybe_prune(keys[fresh[0].filename][:2])
    return [results[name] for name in names]


def _cacheable(result: FileResult) -> bool:
    # A syntax error is a property of the bytes and worth caching; an internal error is not.
    return result.error is None or not result.error.message.startswith("internal error")
