"""check_files: reading failures, in-process versus pool, deterministic order."""

from __future__ import annotations

import json
import os

import pytest

import fake_rule
from accumlint import engine, parallel
from accumlint.parallel import check_files, read_source


def _tree(tmp_path, count=12):
    paths = []
    for index in range(count):
        path = tmp_path / f"m{index:02d}.py"
        if index % 4 == 3:
            path.write_text("def broken(:\n    loss.backward()\n")
        else:
            path.write_text(f"x = {index}\nfor b in data:\n    loss = f(b)\n    loss.backward()\n    opt.step()\n")
        paths.append(path)
    return paths


def _summary(results):
    return [(r.filename, [(f.code, f.location) for f in r.findings], r.error) for r in results]


def test_pool_and_in_process_give_the_same_sorted_results(tmp_path, monkeypatch):
    paths = _tree(tmp_path) + [tmp_path / "missing.py"]
    pooled = []
    real_pool = parallel._run_pool
    monkeypatch.setattr(parallel, "_run_pool", lambda *a, **k: pooled.append(1) or real_pool(*a, **k))
    serial = check_files(paths, jobs=1)
    assert pooled == []
    both = check_files(reversed(paths), jobs=2)
    assert pooled == [1]  # twelve files and two jobs: the pool really ran
    assert _summary(both) == _summary(serial)
    names = [r.filename for r in both]
    assert names == sorted(names) and len(names) == 13
    errors = {os.path.basename(r.filename): r.error.message for r in both if r.error}
    assert errors["missing.py"] == "no such file"
    assert errors["m03.py"].startswith("syntax error at ")


def test_few_files_stay_in_process(tmp_path, monkeypatch):
    fake_rule.install(monkeypatch)  # monkeypatched rules only exist in this process
    monkeypatch.setattr(parallel, "_run_pool", lambda *a, **k: pytest.fail("pool used for 3 files"))
    results = check_files(_tree(tmp_path, 3), ["ACC001"], jobs=8)
    assert [[f.code for f in r.findings] for r in results] == [["ACC001"]] * 3


def test_read_failures_name_one_cause(tmp_path, monkeypatch):
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "loop_a.py").symlink_to(tmp_path / "loop_b.py")
    (tmp_path / "loop_b.py").symlink_to(tmp_path / "loop_a.py")
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    (tmp_path / "utf16.py").write_bytes("loss.backward()\n".encode("utf-16"))
    (tmp_path / "big.py").write_bytes(b"#" * 2000)
    monkeypatch.setattr(parallel, "MAX_FILE_BYTES", 1000)
    expected = {
        "dir.py": "is a directory",
        "dangling.py": "broken symbolic link",
        "loop_a.py": "symbolic link loop",
        "nul.py": "binary file",
        "utf16.py": "binary file",
        "big.py": "too large to check (2000 bytes, limit 1000)",
        "absent.py": "no such file",
    }
    for name, cause in expected.items():
        error = read_source(str(tmp_path / name))
        assert not isinstance(error, bytes), name
        assert error.message.startswith(cause), (name, error.message)
    results = check_files([tmp_path / name for name in expected], jobs=1)
    assert all(r.error is not None and "\n" not in r.error.message for r in results)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    # Opening a FIFO for reading blocks until a writer comes; keep one ready.
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        assert read_source(str(fifo)).message == "not a regular file"
    finally:
        os.close(writer)


def test_duplicates_and_path_types_collapse(tmp_path):
    path = _tree(tmp_path, 1)[0]
    results = check_files([path, str(path), path], jobs=1)
    assert [r.filename for r in results] == [str(path)]


def test_an_internal_error_costs_one_file(tmp_path, monkeypatch):
    paths = _tree(tmp_path, 3)

    def explode(source, filename, select, with_edits=True):
        if filename.endswith("m01.py"):
            raise ValueError("boom\nsecond line")
        return parallel.FileResult(filename)

    monkeypatch.setattr(engine, "check_source", explode)
    results = check_files(paths, jobs=1)
    assert [r.error.message if r.error else None for r in results] == [
        None, "internal error: ValueError: boom", None]


def test_pool_that_cannot_start_falls_back_in_process(tmp_path, monkeypatch):
    class NoProcesses:
        def __init__(self, *args, **kwargs):
            raise OSError("process creation forbidden")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", NoProcesses)
    results = check_files(_tree(tmp_path, 10), jobs=4)
    assert len(results) == 10 and sum(r.error is not None for r in results) == 2


def test_notebooks_are_checked_cell_by_cell(tmp_path, monkeypatch):
    fake_rule.install(monkeypatch)
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
                           "source": ["x = 1\n", "loss.backward()"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook))
    (result,) = check_files([path], ["ACC001"], jobs=1)
    assert [(f.filename, f.cell, f.location.row) for f in result.findings] == [(str(path), 1, 2)]


def test_chunks_balance_sizes():
    items = [(str(n), b"x" * size) for n, size in enumerate([100, 90, 10, 10, 5, 5])]
    chunks = parallel._chunks(items, 2)
    totals = sorted(sum(len(data) for _name, data in chunk) for chunk in chunks)
    assert totals == [110, 110]
    assert sorted(name for chunk in chunks for name, _ in chunk) == [str(n) for n in range(6)]
