"""GitHub workflow annotations."""

from __future__ import annotations

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


def test_notebook_finding_names_the_cell_not_a_json_line():
    out = render_github([_finding("nb.ipynb:cell 2")], [])
    assert out == (
        "::error file=nb.ipynb,title=ACC001::cell 2, line 3, col 5: loss is not divided by accum_steps\n"
    )


def test_nothing_to_report_prints_nothing():
    assert render_github([], []) == ""
