"""A content-hash cache of check results, shared safely by concurrent processes.

Layout: `<root>/.accumlint_cache/v1/<2 hex>/<sha256>.json`, one small JSON file per entry.
The key hashes the file's bytes, the check's fingerprint (selection, mode, accumlint and Python
versions, and the package's own files, so an edited checkout never reads stale results) and
nothing else: entries hold no filename, so a copied or renamed file is still a hit.
Writes go to a temporary file renamed into place (atomic on POSIX and Windows); a reader sees a
whole entry or none. Anything unreadable is a miss. The directory is pruned to `max_entries`,
oldest first.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, Collection, Optional

import accumlint
from accumlint.model import Edit, FileError, FileResult, Finding, FixSummary, Location, Notice
from accumlint.project import file_digest

CACHE_DIR = ".accumlint_cache"
LAYOUT = "v3"  # v2: notebook cells; v3: the project modules a result rests on
MAX_ENTRIES = 20_000  # about 10 MB of small JSON files


def _package_stamp() -> str:
    """Sizes and mtimes of accumlint's own modules: a cheap stand-in for hashing the code."""
    package = Path(accumlint.__file__).parent
    parts = []
    for path in sorted(package.rglob("*.py")):
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts)


def fingerprint(select: Collection[str], mode: str = "check", extra: str = "") -> str:
    """Everything besides the file's bytes that decides a result. `extra`: serialised config."""
    # The parser is CPython's own `ast`: a new Python may parse (and so judge) differently.
    python = ".".join(map(str, sys.version_info[:3]))
    text = "\n".join([accumlint.__version__, python, _package_stamp(), mode, ",".join(sorted(select)), extra])
    return hashlib.sha256(text.encode()).hexdigest()


def find_project_root(start: Path) -> Path:
    """The nearest directory holding pyproject.toml, .git or setup.cfg; else `start` itself."""
    start = start.resolve()
    for directory in [start, *start.parents]:
        if any((directory / marker).exists() for marker in ("pyproject.toml", ".git", "setup.cfg")):
            return directory
    return start


def _to_json(result: FileResult) -> dict[str, Any]:
    # No filename anywhere: an entry is rebound to whichever path has these bytes.
    findings = []
    for finding in result.findings:
        item = asdict(finding)
        if item.pop("filename") != result.filename:  # in a helper of another module: that module
            item["elsewhere"] = str(Path(finding.filename).resolve())
        findings.append(item)
    return {
        "findings": findings,
        "error": result.error.message if result.error else None,
        "error_cell": result.error.cell if result.error else None,
        "notices": [{"row": n.row, "message": n.message, "cell": n.cell} for n in result.notices],
        # Findings that rest on other modules of the project hold only for this file in this
        # project, and only while those modules keep their text.
        "origin": str(Path(result.filename).resolve()) if result.dependencies else None,
        "dependencies": result.dependencies,
    }


def _still_valid(data: dict[str, Any], filename: str) -> bool:
    dependencies = data.get("dependencies") or {}
    if not dependencies:
        return True
    if data.get("origin") != str(Path(filename).resolve()):
        return False
    return all(file_digest(Path(path)) == digest for path, digest in dependencies.items())


def _cell(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def _location(data: dict[str, Any]) -> Location:
    return Location(int(data["row"]), int(data["column"]))


def _elsewhere(path: str, checked: str) -> str:
    """Another module's path, named the way the checked file is (relative or not)."""
    if os.path.isabs(checked):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _finding(data: dict[str, Any], filename: str) -> Finding:
    if data.get("elsewhere"):
        filename = _elsewhere(str(data["elsewhere"]), filename)
    fix = data.get("fix")
    summary = None
    if fix is not None:
        summary = FixSummary(
            message=fix["message"],
            applicability=fix["applicability"],
            edits=tuple(
                Edit(edit["content"], _location(edit["location"]), _location(edit["end_location"]))
                for edit in fix["edits"]
            ),
        )
    return Finding(
        code=data["code"],
        message=data["message"],
        filename=filename,
        location=_location(data["location"]),
        end_location=_location(data["end_location"]),
        fix=summary,
        url=data.get("url"),
        cell=_cell(data.get("cell")),
    )


def _from_json(data: dict[str, Any], filename: str) -> FileResult:
    result = FileResult(filename, findings=[_finding(item, filename) for item in data["findings"]])
    if data["error"] is not None:
        result.error = FileError(filename, str(data["error"]), _cell(data.get("error_cell")))
    result.notices = [
        Notice(filename, int(item["row"]), str(item["message"]), _cell(item.get("cell")))
        for item in data.get("notices", [])
    ]
    result.dependencies = {str(path): str(digest) for path, digest in (data.get("dependencies") or {}).items()}
    return result


class Cache:
    """Look up and store FileResults by content. Never raises: a broken cache is an empty one."""

    def __init__(self, root: Path, fingerprint: str, max_entries: int = MAX_ENTRIES) -> None:
        self.directory = Path(root) / CACHE_DIR / LAYOUT
        self.fingerprint = fingerprint
        self.max_entries = max_entries
        self.hits = 0
        self.writes = 0

    def key(self, content: bytes) -> str:
        digest = hashlib.sha256(self.fingerprint.encode())
        digest.update(b"\0")
        digest.update(content)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, filename: str) -> Optional[FileResult]:
        try:
            with open(self._path(key), encoding="utf-8") as handle:
                data = json.load(handle)
            if not _still_valid(data, filename):
                return None
            result = _from_json(data, filename)
        except Exception:  # missing, half-written by a crashed old version, or garbage
            return None
        self.hits += 1
        return result

    def put(self, key: str, result: FileResult) -> None:
        path = self._path(key)
        try:
            if not path.parent.is_dir():
                self._prepare()
                path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(_to_json(result), handle, separators=(",", ":"))
                os.replace(temporary, path)
            except BaseException:
                _unlink(Path(temporary))
                raise
            self.writes += 1
        except OSError:  # read-only checkout, full disk: run without a cache
            pass

    def _prepare(self) -> None:
        """Mark the directory as a cache for tools that honour it (git, backup software)."""
        top = self.directory.parent
        top.mkdir(parents=True, exist_ok=True)
        for name, text in (
            (".gitignore", "# created by accumlint\n*\n"),
            ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# accumlint cache\n"),
        ):
            if not (top / name).exists():
                (top / name).write_text(text, encoding="utf-8")

    def maybe_prune(self, shard: str) -> int:
        """Prune only when one shard (1/256 of the keys) suggests the bound is passed: cheap."""
        try:
            estimate = 256 * sum(1 for _ in (self.directory / shard).glob("*.json"))
        except OSError:
            return 0
        return self.prune() if estimate > self.max_entries else 0

    def prune(self) -> int:
        """Delete the oldest entries beyond the bound; returns how many went. Never raises."""
        entries = []
        try:
            for shard in self.directory.iterdir():
                for entry in shard.glob("*.json"):
                    try:
                        entries.append((entry.stat().st_mtime, entry))
                    except OSError:
                        continue
        except OSError:
            return 0
        excess = len(entries) - self.max_entries
        if excess <= 0:
            return 0
        entries.sort()
        # Go down to 90% of the bound, so a full cache is not pruned on every run.
        doomed = entries[: excess + self.max_entries // 10]
        for _mtime, entry in doomed:
            _unlink(entry)
        return len(doomed)

    def clear(self) -> None:
        import shutil

        shutil.rmtree(self.directory.parent, ignore_errors=True)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass

