"""Precision on real-world styles: correct scripts must stay clean; buggy variants must be
reported with exactly the findings their header lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.snippets import findings_of

CORPUS = Path(__file__).resolve().parent / "corpus"
CLEAN = sorted(CORPUS.glob("*.py"))
BUGGY = sorted((CORPUS / "buggy").glob("*.py"))
_EXPECT = re.compile(r"^# expect: (ACC\d{3})@(\d+)\s*$", re.M)


def _check(path: Path):
    return {(f.code, f.location.row) for f in findings_of(path.read_text(encoding="utf-8"), path=str(path))}


def test_corpus_is_not_empty():
    assert len(CLEAN) >= 10
    assert len(BUGGY) >= 5


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: p.name)
def test_correct_script_has_no_findings(path):
    assert _check(path) == set()


@pytest.mark.parametrize("path", BUGGY, ids=lambda p: p.name)
def test_buggy_script_reports_exactly_expected(path):
    text = path.read_text(encoding="utf-8")
    expected = {(code, int(row)) for code, row in _EXPECT.findall(text)}
    assert expected, f"{path.name} has no '# expect: ACCnnn@row' header"
    assert _check(path) == expected


@pytest.mark.parametrize("path", CLEAN + BUGGY, ids=lambda p: p.name)
def test_corpus_file_compiles(path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec")
