"""GitHub workflow annotations."""

from __future__ import annotations

import json

from accumlint.model import FileError, Finding, Location
from accumlint.reporting.github import render_github


def _finding(filename="src/train.py", message="loss is not divided by accum_steps") -> Finding:
    return Finding("ACC001", message, filename, Location(3, 5), Location(3, 20))


def test_one_annotation_per_finding_in_the_documented_shape():
    out = render_github([_finding(), _finding("b.py")], [])
    lines = out.splitlines()
    assert lines[0] == (
        "::error file=src/train.py,line=3,col=5,endLine=3,endColumn=20,title=ACC001"
        "::loss is not divided by accum_steps"
    )
    assert len(lines) == 2 and out.endswith("\n")


def test_special_characters_are_escaped():
    out = render_github([_finding("dir,1/a:b.py", "50% of\nthe loss\r")], [])
    assert out.count("\n") == 1  # a newline in a message must not end the command
    assert "file=dir%2C1/a%3Ab.py," in out
    assert out.rstrip("\n").endswith("::50%25 of%0Athe loss%0D")


def test_errors_are_annotated_with_their_cause():
    out = render_github([], [FileError("bad.py", "syntax error at 1:5: invalid syntax")])
    assert out == "::error file=bad.py,title=accumlint::syntax error at 1:5: invalid syntax\n"


def test_notebook_finding_points_at_the_json_line_of_the_cell(tmp_path):
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]},
                          {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["x = 1\n", "y = 2\n", "for b in d:  loss.backward()\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    text = json.dumps(notebook, indent=1)
    path.write_text(text)
    finding = Finding("ACC001", "msg", str(path), Location(3, 14), Location(3, 29), cell=2)
    out = render_github([finding], [])
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "loss.backward" in row)
    column = text.splitlines()[line - 1].index("loss.backward") + 1
    assert f",line={line},col={column},endLine={line},endColumn={column + 15}," in out
    assert out.rstrip("\n").endswith("::cell 2, line 3, col 14: msg")


def test_notebook_that_cannot_be_read_is_annotated_as_a_whole():
    out = render_github([Finding("ACC001", "msg", "gone.ipynb", Location(3, 5), Location(3, 20), cell=2)], [])
    assert out == "::error file=gone.ipynb,title=ACC001::cell 2, line 3, col 5: msg\n"


def test_nothing_to_report_prints_nothing():
    assert render_github([], []) == ""
