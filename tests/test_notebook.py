"""Notebooks: cell-by-cell checking, and fixes that touch only the fixed cells' source."""

from __future__ import annotations

import json

import pytest

import fake_rule
from accumlint.notebook import (
    _mask,
    _unmask,
    check_notebook,
    fix_notebook,
)

LOOP = [
    "%matplotlib inline\n",
    "for x in data:\n",
    "    !nvidia-smi\n",
    "    loss = f(x)\n",
    "    loss.backward()\n",
    "    opt.step()",
]
REAL_LOOP = (
    "for i, (x, y) in enumerate(loader):\n"
    "    loss = criterion(model(x), y)\n"
    "    loss.backward()\n"
    "    if (i + 1) % accum_steps == 0:\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
)


def _cell(source, kind="code"):
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _notebook(*cells, language="python", **dump) -> bytes:
    data = {
        "cells": list(cells),
        "metadata": {"language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    dump.setdefault("indent", 1)
    dump.setdefault("ensure_ascii", False)
    return (json.dumps(data, **dump) + "\n").encode("utf-8")


@pytest.fixture
def fake(monkeypatch):
    fake_rule.install(monkeypatch)


def test_findings_carry_cell_and_cell_relative_line(fake):
    raw = _notebook(_cell("# title", "markdown"), _cell(LOOP), _cell("y = 1\nl.backward()\n"))
    result = check_notebook(raw, "nb.ipynb")
    located = [(f.filename, f.cell, f.location.row, f.location.column) for f in result.findings()]
    # The magic lines are masked without moving any line: backward stays on line 5 of cell 2.
    assert located == [("nb.ipynb", 2, 5, 5), ("nb.ipynb", 3, 2, 1)]
    assert result.findings()[0].display_path == "nb.ipynb:cell 2"
    assert result.errors() == []


def test_fix_changes_only_the_fixed_cells_source(fake):
    clean = _cell(["x = 1\n", "print(x)"])
    raw = _notebook(_cell("text", "markdown"), _cell(LOOP), clean, _cell("l.backward()\nz = 'é'\n"))
    new = fix_notebook(raw)
    fixed_loop = LOOP[:4] + ["    (loss / accum_steps).backward()\n", LOOP[5]]
    expected = _notebook(_cell("text", "markdown"), _cell(fixed_loop), clean,
                         _cell("(l / accum_steps).backward()\nz = 'é'\n"))
    assert new == expected
    assert fix_notebook(new) is None  # fixing twice is fixing once


@pytest.mark.parametrize("dump", [{"indent": 2}, {"indent": "\t"}, {"indent": None},
                                  {"indent": 1, "ensure_ascii": True}])
def test_fix_keeps_the_notebooks_own_layout(fake, dump):
    other = _cell(["a = 'ü'\n", "b = 2"])
    raw = _notebook(other, _cell(["l.backward()\n", "c = 'ü'"]), **dump)
    new = fix_notebook(raw)
    assert new == _notebook(other, _cell(["(l / accum_steps).backward()\n", "c = 'ü'"]), **dump)


def test_fix_keeps_crlf_json_and_unusual_spacing_byte_for_byte(fake):
    text = (
        '{"cells": [\r\n'
        '  {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 3,\r\n'
        '   "source": [ "keep = 1\\n" ,  "keep.backward()" ]},\r\n'
        '  {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 4,\r\n'
        '   "source": ["l.backward()\\n",\r\n     "after = 1"\r\n   ]}\r\n'
        '], "metadata": {}, "nbformat": 4, "nbformat_minor": 2}\r\n'
    )
    new = fix_notebook(text.encode())
    expected = text.replace('"keep.backward()"', '"(keep / accum_steps).backward()"').replace(
        '"l.backward()\\n"', '"(l / accum_steps).backward()\\n"')
    assert new == expected.encode()


def test_magics_are_written_back_unchanged_even_when_reindented():
    masked = _mask("for b in data:\n    %time step(b)\n    !ls \\\n      -la\n")
    assert masked is not None and "%" not in masked.code and "!" not in masked.code
    compile(masked.code, "cell", "exec")
    assert masked.code.count("\n") == 4  # line numbers kept
    assert _unmask(masked.code, masked) == "for b in data:\n    %time step(b)\n    !ls \\\n      -la\n"
    moved = masked.code.replace("    pass", "        pass", 1)
    assert _unmask(moved, masked).splitlines()[1] == "        %time step(b)"
    dropped = "\n".join(line for line in masked.code.splitlines() if "_0" not in line)
    assert _unmask(dropped, masked) is None  # a fix that loses a magic is declined


def test_valid_python_is_never_masked():
    source = "x = 5 % 2\ns = '''\n%not a magic\n'''\n"
    masked = _mask(source)
    assert masked is not None and masked.code == source and masked.originals == {}


def test_cell_magics_other_than_python_are_skipped(fake):
    raw = _notebook(_cell("%%bash\nloss.backward()\n"), _cell("%%python\nloss.backward()\n"))
    result = check_notebook(raw, "nb.ipynb")
    assert [(f.cell, f.location.row) for f in result.findings()] == [(2, 2)]
    new = json.loads(fix_notebook(raw))
    assert new["cells"][0]["source"] == "%%bash\nloss.backward()\n"
    assert new["cells"][1]["source"] == "%%python\n(loss / accum_steps).backward()\n"


@pytest.mark.parametrize("magic", ["%%time", "%%capture out", "%%timeit -n 1 -r 1", "%%prun -s cumulative"])
def test_python_cell_magics_are_checked_and_fixed(fake, magic):
    raw = _notebook(_cell(f"{magic}\nfor b in data:\n    loss = f(b)\n    loss.backward()\n"))
    assert [(f.cell, f.location.row) for f in check_notebook(raw, "nb.ipynb").findings()] == [(1, 4)]
    new = json.loads(fix_notebook(raw))
    assert new["cells"][0]["source"] == f"{magic}\nfor b in data:\n    loss = f(b)\n    (loss / accum_steps).backward()\n"


@pytest.mark.parametrize("magic", ["%%bash", "%%writefile train.py", "%%html", "%%sql"])
def test_other_language_cell_magics_are_skipped(fake, magic):
    raw = _notebook(_cell(f"{magic}\nloss.backward()\n"))
    assert check_notebook(raw, "nb.ipynb").findings() == []
    assert fix_notebook(raw) is None


def test_non_python_notebooks_are_not_checked(fake):
    raw = _notebook(_cell("loss.backward()"), language="R")
    assert check_notebook(raw, "nb.ipynb").findings() == []
    assert fix_notebook(raw) is None


def test_syntax_error_names_the_cell(fake):
    raw = _notebook(_cell("ok = 1"), _cell("def (:\n  loss.backward()"))
    result = check_notebook(raw, "nb.ipynb")
    assert [(e.filename, e.cell) for e in result.errors()] == [("nb.ipynb", 2)]
    merged = result.as_file_result()
    assert merged.error is not None and merged.error.cell == 2
    assert merged.error.message.startswith("syntax error")
    assert fix_notebook(raw) is None


def test_a_cell_that_is_not_python_spoils_only_itself(fake):
    """A shell script pasted without `!` or a cell of console output is an error of its own
    cell; the message says the other cells were checked, and their findings stand."""
    raw = _notebook(_cell(LOOP), _cell("bash ./scripts/run.sh --epochs 10\n"), _cell("x = 1"))
    merged = check_notebook(raw, "nb.ipynb").as_file_result()
    assert merged.error is not None and merged.error.cell == 2
    assert merged.error.message.endswith("(the other 2 code cells were checked)")
    assert merged.findings, "the loop cell is still checked"


def test_a_notebook_whose_every_cell_fails_says_nothing_of_other_cells(fake):
    merged = check_notebook(_notebook(_cell("def (:\n  pass")), "nb.ipynb").as_file_result()
    assert merged.error is not None and "checked" not in merged.error.message


@pytest.mark.parametrize("raw, cause", [
    (b"{not json", "invalid JSON at line 1"),
    (b'{"cells": [1, 2}', "invalid JSON at line 1"),
    (b"[]", "not a notebook"),
    (b'{"cells": {}}', "not a notebook"),
    (b"\xff\xfe{}", "not UTF-8"),
    ('\ufeff{"cells": []}'.encode(), "byte-order mark"),
    (b"[" * 100_000, "JSON nested too deeply"),
    (b"", "invalid JSON"),
])
def test_broken_notebooks_give_one_line_errors(raw, cause):
    result = check_notebook(raw, "nb.ipynb")
    assert result.error is not None and cause in result.error.message
    assert "\n" not in result.error.message
    assert fix_notebook(raw) is None


def test_odd_cells_are_ignored_not_fatal(fake):
    raw = _notebook({"cell_type": "code"}, _cell(["a", 3]), _cell(""), "junk", _cell("l.backward()"))
    result = check_notebook(raw, "nb.ipynb")
    assert [(f.filename, f.cell) for f in result.findings()] == [("nb.ipynb", 5)]


def test_real_acc001_example_in_a_notebook():
    # Needs the real rules (ACC001 on the backward line, ACC005 on the `if`).
    raw = _notebook(_cell("import torch"), _cell(REAL_LOOP))
    found = {(f.code, f.cell, f.location.row) for f in check_notebook(raw, "nb.ipynb").findings()}
    assert ("ACC001", 2, 3) in found
    assert ("ACC005", 2, 4) in found
    new = fix_notebook(raw)
    assert new is not None
    cells = json.loads(new)["cells"]
    assert cells[0] == json.loads(raw)["cells"][0]
    assert "(loss / accum_steps).backward()" in "".join(cells[1]["source"])


def test_magic_in_a_crlf_cell_survives_a_fix(fake):
    raw = _notebook(_cell("%load_ext autoreload\r\nloss.backward()\r\n"))
    assert json.loads(fix_notebook(raw))["cells"][0]["source"] == (
        "%load_ext autoreload\r\n(loss / accum_steps).backward()\r\n"
    )


def test_a_notebook_result_names_the_project_modules_its_cells_rest_on(tmp_path):
    from test_project import PACKAGE, SCRIPT, _write

    _write(tmp_path, {**PACKAGE, "train.py": SCRIPT})
    script = (tmp_path / "train.py").read_text()
    raw = _notebook(_cell("x = 1\n"), _cell(script))
    path = tmp_path / "train.ipynb"
    path.write_bytes(raw)
    from accumlint import engine

    alone = engine.check_source(script.encode(), str(tmp_path / "train.py")).dependencies
    assert alone  # the script rests on modules of pkg/
    merged = check_notebook(raw, str(path)).as_file_result()
    assert merged.dependencies == alone


TAPE_LOOP_KEEPING_LOSSES = (
    "losses = []\n"
    "for x, y in ds:\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean((model(x) - y) ** 2)\n"
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"
    "    losses.append(loss)\n"
)
TORCH_LOOP_KEEPING_LOSSES = (
    "losses = []\n"
    "for x, y in loader:\n"
    "    loss = criterion(model(x), y)\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    opt.zero_grad()\n"
    "    losses.append(loss)\n"
)


def _codes_by_cell(raw: bytes) -> list[tuple[int, str]]:
    result = check_notebook(raw, "nb.ipynb")
    return [(finding.cell, finding.code) for finding in result.findings()]


def test_imports_of_earlier_cells_decide_the_framework():
    # The cells share one namespace: a TensorFlow loop keeps no autograd graph, whichever cell imports it.
    tensorflow = _notebook(_cell("import tensorflow as tf\n"), _cell(TAPE_LOOP_KEEPING_LOSSES))
    assert _codes_by_cell(tensorflow) == []
    torch = _notebook(_cell("import torch\n"), _cell(TORCH_LOOP_KEEPING_LOSSES))
    assert _codes_by_cell(torch) == [(2, "ACC002")]


def test_imports_of_later_cells_count_too_and_a_broken_cell_does_not_hide_them():
    raw = _notebook(_cell(TAPE_LOOP_KEEPING_LOSSES), _cell("x = (\n"), _cell("import tensorflow as tf\n"))
    result = check_notebook(raw, "nb.ipynb")
    assert [finding.code for finding in result.findings()] == []
    assert [error.cell for error in result.errors()] == [2]


def test_a_cell_with_an_indented_first_line_is_checked_as_ipython_runs_it():
    # IPython takes the first line's indent off every line; the cell runs, so it is no syntax error.
    indented = "".join("  " + line + "\n" for line in REAL_LOOP.splitlines())
    raw = _notebook(_cell(indented))
    result = check_notebook(raw, "nb.ipynb")
    assert result.errors() == []
    plain = check_notebook(_notebook(_cell(REAL_LOOP)), "nb.ipynb").findings()
    found = result.findings()
    assert [(f.code, f.location.row) for f in found] == [(f.code, f.location.row) for f in plain] != []
    # Columns are those of the cell as written: two more than in the unindented cell.
    assert [f.location.column for f in found] == [f.location.column + 2 for f in plain]
    assert [f.end_location.column for f in found] == [f.end_location.column + 2 for f in plain]
    assert all(f.fix is None for f in found)
    assert fix_notebook(raw, unsafe=True) is None  # such a cell is reported, never rewritten


def test_an_indented_cell_that_ipython_could_not_run_either_is_a_syntax_error():
    raw = _notebook(_cell("  x = 1\n y = 2\n"))
    assert [error.cell for error in check_notebook(raw, "nb.ipynb").errors()] == [1]


@pytest.mark.parametrize("line", ["ls ./data/train/", "pip install torch==2.13.0", "cd ../data", "cat notes.txt"])
def test_automagic_lines_without_percent_are_ipython_not_syntax_errors(line):
    raw = _notebook(_cell(line + "\n" + REAL_LOOP))
    result = check_notebook(raw, "nb.ipynb")
    assert result.errors() == []
    assert "ACC001" in {f.code for f in result.findings()}


@pytest.mark.parametrize("line", ["ls = [1, 2]", "cd(path)", "time.sleep(1)", "rm - x"])
def test_python_that_starts_like_an_automagic_is_left_alone(line):
    # Valid Python is never masked; with a real syntax error beside it, the cell is still reported.
    assert check_notebook(_notebook(_cell(line + "\n" + REAL_LOOP)), "nb.ipynb").errors() == []
    broken = check_notebook(_notebook(_cell(line + "\nx = (\n")), "nb.ipynb")
    assert [error.cell for error in broken.errors()] == [1]
