"""A file written for a newer Python than the one accumlint runs on is said to be so, through the
CLI: its own line, counted apart from syntax errors in the summary, and in the JSON output. A real
syntax error on a line that looks alike is still a syntax error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from accumlint.newer_syntax import newer_syntax

pytestmark = [
    pytest.mark.usefixtures("fake_rules"),
    pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 parses this syntax: nothing to report"),
]

NEWER = {
    "alias": "type Batch = list[int]\n",
    "generic alias": "type Pair[T] = tuple[T, T]\n",
    "generic function": "def first[T](items: list[T]) -> T:\n    return items[0]\n",
    "generic class": "class Box[T]:\n    value: T\n",
    "async generic": "async def fetch[T](x: T) -> T:\n    return x\n",
    "f-string quote": 'path = f"{root / "checkpoints"}"\n',
    "f-string quote, spec": "label = f'{names['first']!r:>10}'\n",
}


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("text", NEWER.values(), ids=NEWER.keys())
def test_newer_syntax_is_named_with_both_versions(project, invoke, text):
    _write(project / "modern.py", "import torch\n" + text)
    result = invoke("check", "modern.py")
    assert result.exit_code == 2
    line = next(line for line in result.stderr.splitlines() if line.startswith("modern.py"))
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert "needs Python 3.12 to parse" in line and f"accumlint runs on {running}" in line
    assert "syntax error" not in line
    assert "1 file needs a newer Python to parse" in result.stdout
    assert "could not be checked" not in result.stdout and "All checks passed" not in result.stdout


def test_counted_apart_from_real_syntax_errors(project, invoke):
    _write(project / "modern.py", NEWER["alias"])
    _write(project / "broken.py", "def broken(:\n    pass\n")
    _write(project / "alsobroken.py", "type = (1,\n")
    result = invoke("check", ".")
    assert result.exit_code == 2
    assert "2 files could not be checked" in result.stdout
    assert "1 file needs a newer Python to parse" in result.stdout
    errors = {line.split(":", 1)[0]: line for line in result.stderr.splitlines() if ": error: " in line}
    assert "syntax error" in errors["broken.py"] and "syntax error" in errors["alsobroken.py"]
    assert "needs Python 3.12" in errors["modern.py"]


def test_json_entry_keeps_the_position(project, invoke):
    _write(project / "modern.py", "x = 1\n" + NEWER["generic function"])
    result = invoke("check", "--format", "json", "modern.py")
    entries = json.loads(result.stdout)
    assert [e["code"] for e in entries] == [None]
    assert entries[0]["message"].startswith("needs Python 3.12 to parse")
    assert entries[0]["location"]["row"] == 2


@pytest.mark.parametrize(
    "line",
    [
        "type = 5 +", "typed X = 1", "def f(x)[0]:", "klass Box[T]:", "x = type[int]",
        'x = f"{d["key"}"', 'x = f"{1 + }" + "a"', 'x = "{" + f"{a}" + "}"',
    ],
)
def test_lines_that_only_look_alike_are_not_newer_syntax(line):
    assert newer_syntax(line + "\n", 1) is None
