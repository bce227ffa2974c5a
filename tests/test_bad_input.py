"""Bad input never crashes: one clear line per file, and fixes keep every other byte.

Cases that could kill the interpreter (a parser or a tree walk overflowing its native stack) run in a
subprocess.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import fake_rule
from accumlint.engine import check_source, fix_source
from accumlint.parallel import check_files

LOOP = (
    "for i, (x, y) in enumerate(loader):\n"
    "    loss = criterion(model(x), y)\n"
    "    loss.backward()\n"
    "    if (i + 1) % accum_steps == 0:\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
)
FIXED_LINE = "    (loss / accum_steps).backward()"
BAD = {
    "syntax": (b"def f(:\n    loss.backward()\n", "syntax error"),
    "binary": (b"\x7fELF\x00\x01\x02loss.backward()", ""),
    "undeclared latin-1": ("s = 'caf\xe9'\nloss.backward()\n".encode("latin-1"), ""),
    "undeclared latin-1, no trigger": ("s = 'caf\xe9'\n".encode("latin-1"), ""),
    "unknown cookie": (b"# coding: klingon\nloss.backward()\n", "klingon"),
    "unknown cookie, no trigger": (b"# coding: klingon\nx = 1\n", "klingon"),
    "BOM and latin-1 cookie": (b"\xef\xbb\xbf# coding: latin-1\nloss.backward()\n", ""),
    "mixed tabs and spaces": (b"for x in d:\n\tif x:\n        loss.backward()\n", ""),
    "1000-deep parentheses": (b"x = " + b"(" * 1000 + b"1" + b")" * 1000 + b"\nloss.backward()\n", ""),
    "5000 unary minus": (b"x = " + b"-" * 5000 + b"1\nloss.backward()\n", ""),
    "3000-term sum": (b"x = " + b" + ".join([b"1"] * 3000) + b"\nloss.backward()\n", ""),
}


def _one_line_error(result, cause=""):
    assert result.error is not None, "bad input must be reported"
    message = result.error.message
    assert message and "\n" not in message and "Traceback" not in message
    assert cause in message
    assert ":-1" not in message and " 0:" not in message, f"bogus position in {message!r}"
    return message


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("function", [check_source, fix_source])
def test_engine_reports_bad_input_in_one_line(name, function):
    source, cause = BAD[name]
    result = function(source, "bad.py")
    _one_line_error(result, cause)
    assert result.filename == "bad.py" and result.error.filename == "bad.py"
    assert result.fixed_source is None


@pytest.mark.parametrize("name", list(BAD))
def test_check_files_reports_bad_input_in_one_line(tmp_path, name):
    source, cause = BAD[name]
    path = tmp_path / "bad.py"
    path.write_bytes(source)
    good = tmp_path / "good.py"
    good.write_text("x = 1\n")
    bad_result, good_result = check_files([path, good], jobs=1)
    _one_line_error(bad_result, cause)
    assert good_result.error is None  # every other file is still checked


def _engine_in_subprocess(source: bytes) -> subprocess.CompletedProcess:
    program = (
        "import sys\n"
        "from accumlint.engine import check_source, fix_source\n"
        "data = sys.stdin.buffer.read()\n"
        "for function in (check_source, fix_source):\n"
        "    print(function(data, 'deep.py').error.message)\n"
    )
    return subprocess.run([sys.executable, "-c", program], input=source, capture_output=True, timeout=60)


def test_deeply_nested_brackets_do_not_kill_the_engine():
    # Native parsers have died here with no traceback at all (SIGSEGV on ~1,500 nested lists).
    source = b"x = " + b"[" * 1500 + b"]" * 1500 + b"\nloss.backward()\n"
    process = _engine_in_subprocess(source)
    assert process.returncode == 0, f"engine died with {process.returncode}"
    assert process.stdout.decode().count("\n") == 2


def test_check_files_refuses_deep_nesting_with_one_clear_line(tmp_path):
    path = tmp_path / "deep.py"
    path.write_bytes(b"x = " + b"[" * 1500 + b"]" * 1500 + b"\nloss.backward()\n")
    (result,) = check_files([path], jobs=1)
    assert _one_line_error(result).startswith("syntax error at 1:")


def test_200000_line_file(tmp_path):
    # Cheap lines and no trigger word: exercises size through the whole pipeline (see report).
    source = b"pass\n" * 200_000
    assert check_source(source, "big.py").error is None
    path = tmp_path / "big.py"
    path.write_bytes(source + b"def (:\n")
    (result,) = check_files([path], jobs=1)
    assert _one_line_error(result).startswith("syntax error at 200001:")


def test_unreadable_paths_each_name_their_cause(tmp_path):
    # chmod 000 blocks nothing for root, so unreadability comes from what fails for everyone.
    (tmp_path / "adir.py").mkdir()
    (tmp_path / "dangling.py").symlink_to(tmp_path / "gone.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    (tmp_path / "ok.py").write_text(LOOP)
    names = ["adir.py", "dangling.py", "loop.py", "missing.py", "ok.py"]
    results = check_files([tmp_path / name for name in names], jobs=1)
    causes = [r.error.message if r.error else None for r in results]
    assert causes == ["is a directory", "broken symbolic link (its target does not exist)",
                      "symbolic link loop", "no such file", None]


# --- --fix keeps every byte it does not mean to change. ---

VARIANTS = {
    "crlf": lambda text: text.replace("\n", "\r\n").encode(),
    "bom": lambda text: b"\xef\xbb\xbf" + text.encode(),
    "latin-1 cookie": lambda text: ("# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n" + text).encode("latin-1"),
    "tabs": lambda text: text.replace("    ", "\t").encode(),
}


def _expected(variant: str) -> bytes:
    fixed = LOOP.replace("    loss.backward()", FIXED_LINE)
    return VARIANTS[variant](fixed)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fix_preserves_bytes_with_a_stand_in_rule(variant, monkeypatch):
    fake_rule.install(monkeypatch)
    result = fix_source(VARIANTS[variant](LOOP), "train.py", {"ACC001"})
    assert result.error is None
    assert result.fixed_source == _expected(variant)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fix_preserves_bytes_with_the_real_acc001(variant):
    # Needs the real ACC001 rule.
    result = fix_source(VARIANTS[variant](LOOP), "train.py", {"ACC001"})
    assert result.error is None and result.fixes_applied == 1
    assert result.fixed_source == _expected(variant)


def test_real_rules_report_the_example():
    # Needs the real ACC001 and ACC005 rules.
    found = [(f.code, f.location.row) for f in check_source(LOOP, "train.py").findings]
    assert ("ACC001", 3) in found and ("ACC005", 4) in found
