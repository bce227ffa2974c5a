"""The README's sample session is what the checker prints today."""

from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
_SESSION = re.compile(r"```console\n\$ accumlint check (?P<args>[^\n]+)\n(?P<output>.*?)```", re.S)


def test_readme_check_session_matches_the_real_output(monkeypatch, invoke):
    match = _SESSION.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert match, "the README shows no `accumlint check` session"
    monkeypatch.chdir(ROOT)
    result = invoke("check", "--no-cache", *match.group("args").split())
    assert result.stdout == match.group("output")
