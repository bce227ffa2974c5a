"""The content-hash cache: hits, misses, corruption, concurrency, bounds."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import fake_rule
from accumlint.cache import CACHE_DIR, Cache, find_project_root, fingerprint
from accumlint.model import Edit, FileError, FileResult, Finding, FixSummary, Location, Notice
from accumlint.parallel import check_files


def _result(name="a.py") -> FileResult:
    fix = FixSummary("divide", "safe", (Edit("x\n", Location(2, 1), Location(3, 1)),))
    finding = Finding("ACC001", "msg", name, Location(2, 5), Location(2, 9), fix=fix, url="https://u")
    plain = Finding("ACC005", "msg2", name, Location(4, 1), Location(6, 2))
    return FileResult(name, findings=[finding, plain])


def test_round_trip_rebinds_the_filename(tmp_path):
    cache = Cache(tmp_path, fingerprint(["ACC001"]))
    key = cache.key(b"loss.backward()\n")
    assert cache.get(key, "a.py") is None
    cache.put(key, _result("a.py"))
    hit = cache.get(key, "moved/b.py")
    assert hit == _result("moved/b.py")
    error = FileResult("c.py", error=FileError("c.py", "syntax error at 1:1: x"))
    cache.put(cache.key(b"("), error)
    assert cache.get(cache.key(b"("), "d.py").error == FileError("d.py", "syntax error at 1:1: x")
    assert (tmp_path / CACHE_DIR / ".gitignore").read_text().strip().endswith("*")


def test_round_trip_keeps_cells_and_notices(tmp_path):
    cache = Cache(tmp_path, fingerprint(["ACC001"]))
    finding = Finding("ACC001", "msg", "nb.ipynb", Location(2, 5), Location(2, 9), cell=3)
    result = FileResult("nb.ipynb", findings=[finding], error=FileError("nb.ipynb", "syntax error", cell=4),
                        notices=[Notice("nb.ipynb", 1, "invalid `# noqa`", cell=2)])
    cache.put(cache.key(b"nb"), result)
    hit = cache.get(cache.key(b"nb"), "other.ipynb")
    assert hit.findings[0].cell == 3 and hit.findings[0].filename == "other.ipynb"
    assert hit.error == FileError("other.ipynb", "syntax error", cell=4)
    assert hit.notices == [Notice("other.ipynb", 1, "invalid `# noqa`", cell=2)]


def test_key_depends_on_content_and_fingerprint(tmp_path):
    base = Cache(tmp_path, fingerprint(["ACC001"]))
    assert base.key(b"a") != base.key(b"b")
    for other in (fingerprint(["ACC002"]), fingerprint(["ACC001"], mode="fix"),
                  fingerprint(["ACC001"], extra="ignore=ACC005")):
        assert Cache(tmp_path, other).key(b"a") != base.key(b"a")
    assert fingerprint(["ACC002", "ACC001"]) == fingerprint(["ACC001", "ACC002"])


def test_corrupt_entries_are_misses(tmp_path):
    cache = Cache(tmp_path, "fp")
    for index, garbage in enumerate([b"", b"{", b"[]", b'{"findings": [{"code": 1}], "error": null}',
                                     b"\xff\xfe", b'{"findings": []}']):
        key = cache.key(bytes([index]))
        path = cache._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(garbage)
        assert cache.get(key, "x.py") is None, garbage


def test_unwritable_cache_is_silently_off(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = Cache(blocker, "fp")  # works as root too: nothing can be created under a file
    cache.put(cache.key(b"a"), _result())
    assert cache.get(cache.key(b"a"), "a.py") is None and cache.writes == 0


def _hammer(args):
    root, worker = args
    cache = Cache(Path(root), "fp")
    for index in range(150):
        key = cache.key(str(index % 40).encode())  # the same 40 keys from every process
        cache.put(key, _result(f"w{worker}.py"))
        hit = cache.get(key, "x.py")
        assert hit is not None and len(hit.findings) == 2
    return worker


def test_concurrent_processes_never_see_partial_entries(tmp_path):
    with ProcessPoolExecutor(4, mp_context=get_context("spawn")) as pool:
        assert sorted(pool.map(_hammer, [(str(tmp_path), n) for n in range(4)])) == [0, 1, 2, 3]
    cache = Cache(tmp_path, "fp")
    for index in range(40):
        assert cache.get(cache.key(str(index).encode()), "x.py") == _result("x.py")
    leftovers = [p for p in (tmp_path / CACHE_DIR).rglob("*") if p.name.startswith(".tmp-")]
    assert leftovers == []


def test_prune_keeps_the_newest_within_the_bound(tmp_path):
    cache = Cache(tmp_path, "fp", max_entries=20)
    keys = [cache.key(str(n).encode()) for n in range(50)]
    for age, key in enumerate(keys):
        cache.put(key, _result())
        os.utime(cache._path(key), (1_000_000 + age, 1_000_000 + age))
    removed = cache.prune()
    kept = [key for key in keys if cache._path(key).exists()]
    assert removed == 32 and len(kept) == 18
    assert kept == keys[-18:]
    assert cache.prune() == 0


def test_project_root_is_found_upwards(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == tmp_path.resolve()


def test_check_files_uses_and_refreshes_the_cache(tmp_path, monkeypatch):
    fake_rule.install(monkeypatch)
    source = tmp_path / "train.py"
    source.write_text("loss.backward()\n")
    cache = Cache(tmp_path, fingerprint(["ACC001"]))
    first = check_files([source], ["ACC001"], jobs=1, cache=cache)
    assert [f.code for f in first[0].findings] == ["ACC001"] and cache.writes == 1
    # A warm run answers from the cache without checking anything.
    monkeypatch.setattr("accumlint.engine.check_source", lambda *a: 1 / 0)
    again = check_files([source], ["ACC001"], jobs=1, cache=cache)
    assert again == first and cache.hits == 1
    source.write_text("x = 1\nloss.backward()\n")  # changed bytes: checked again
    fresh = check_files([source], ["ACC001"], jobs=1, cache=cache)
    assert fresh[0].error is not None and "internal error" in fresh[0].error.message
    # Internal errors are not cached: the next run tries again.
    monkeypatch.undo()
    fake_rule.install(monkeypatch)
    assert check_files([source], ["ACC001"], jobs=1, cache=cache)[0].findings[0].location.row == 2
