"""The one runner: check, --fix and --diff all go through accumlint.runner.run, with the cache
and the worker pool for each of them."""

from __future__ import annotations

import pytest

from accumlint import engine, parallel
from accumlint.cache import CACHE_DIR
from accumlint.checking import Mode
from accumlint.runner import Task, cache_factory, run
from cli_samples import BUGGY

CODES = frozenset({"ACC001", "ACC006", "ACC009"})


def _files(project, count: int, text: str = BUGGY) -> list[str]:
    names = []
    for index in range(count):
        name = f"m{index:02d}.py"
        (project / name).write_text(text)
        names.append(name)
    return names


@pytest.mark.parametrize("mode", [Mode(), Mode(fix=True), Mode(diff=True), Mode(fix=True, unsafe_fixes=True)])
def test_every_mode_uses_the_pool_for_many_files(project, monkeypatch, mode):
    pooled = []
    real_pool = parallel._run_pool
    monkeypatch.setattr(parallel, "_run_pool", lambda *a, **k: pooled.append(1) or real_pool(*a, **k))
    names = _files(project, 12)
    outcomes = run([Task(name, CODES) for name in names], mode, jobs=2)
    assert pooled == [1]
    assert [o.result.filename for o in outcomes] == names
    if mode.fix:  # workers wrote the fixes (the real rules run in the workers)
        assert all("(loss / accum_steps).backward()" in (project / n).read_text() for n in names)
    elif mode.diff:
        assert all("+    (loss / accum_steps).backward()" in o.diff for o in outcomes)
        assert (project / names[0]).read_text() == BUGGY


@pytest.mark.usefixtures("fake_rules")
def test_fix_mode_answers_from_the_cache_for_a_file_it_left_alone(project, monkeypatch):
    # A report-only finding and an unsafe fix: safe fixing leaves the file alone.
    (project / "left.py").write_text("model.no_sync_missing()\nloss.backward(retain_graph=True)\n")
    (project / "fixed.py").write_text(BUGGY)
    caches = cache_factory(project, Mode(fix=True))
    tasks = [Task("left.py", CODES), Task("fixed.py", CODES)]
    first = run(tasks, Mode(fix=True), jobs=1, caches=caches)
    assert [[f.code for f in o.result.findings] for o in first] == [[], ["ACC009", "ACC006"]]
    assert caches(CODES).writes == 1  # only the file the fixer left alone
    assert (project / CACHE_DIR).is_dir()
    monkeypatch.setattr(engine, "fix_source", lambda *a, **k: 1 / 0)  # a hit must not fix again
    again = run([Task("left.py", CODES)], Mode(fix=True), jobs=1, caches=caches)
    assert [f.code for f in again[0].result.findings] == ["ACC009", "ACC006"] and caches(CODES).hits == 1


def test_text_given_in_a_task_is_checked_as_given_and_never_cached(project):
    (project / "t.py").write_text("x = 1\n")  # what is on disk does not matter
    caches = cache_factory(project, Mode())
    (outcome,) = run([Task("t.py", CODES, data=BUGGY.encode())], Mode(), jobs=1, caches=caches)
    assert "ACC001" in {f.code for f in outcome.result.findings}
    assert caches(CODES).writes == 0 and not (project / CACHE_DIR).exists()


@pytest.mark.usefixtures("fake_rules")
def test_stdin_fix_returns_the_fixed_bytes_and_writes_nothing(project):
    (outcome,) = run([Task("t.py", CODES, data=BUGGY.encode())], Mode(fix=True, write=False), jobs=1)
    assert outcome.fixed is not None and b"(loss / accum_steps).backward()" in outcome.fixed
    assert not (project / "t.py").exists()
