"""A notebook checked twice with the cache on gives the same places in every format: the cell is
data that survives a cache hit (the first run of any format fills the cache for all of them)."""

from __future__ import annotations

import json

import pytest

from cli_samples import BUGGY

pytestmark = pytest.mark.usefixtures("fake_rules")

FORMATS = ["text", "full", "json", "sarif", "github"]


def _write_notebook(project) -> str:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["import torch\n"]},
            {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
             "source": ["%%time\n", *BUGGY.splitlines(keepends=True)]},
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(notebook, indent=1) + "\n"
    (project / "train.ipynb").write_text(text)
    return text


def _json_place(text: str) -> tuple[int, int]:
    """Line and column of the buggy call in the .ipynb text itself."""
    for number, line in enumerate(text.splitlines(), 1):
        if "loss.backward()" in line:
            return number, line.index("loss.backward()") + 1
    raise AssertionError("no backward in the notebook")


def _place(output_format: str, stdout: str, text: str):
    if output_format == "text":
        return [line for line in stdout.splitlines() if ": ACC" in line]
    if output_format == "full":
        return [line for line in stdout.splitlines() if ": ACC" in line or "loss.backward()" in line]
    if output_format == "json":
        return [(d["filename"].rsplit("/", 1)[-1], d["cell"], d["location"], d["code"]) for d in json.loads(stdout)]
    if output_format == "sarif":
        results = json.loads(stdout)["runs"][0]["results"]
        return [(r["locations"][0]["physicalLocation"], r["properties"]) for r in results]
    return stdout.splitlines()


EXPECTED = {
    # The %%time cell magic is checked: the finding is on line 4 of cell 3 (line 1 is the magic).
    "text": lambda row, col: ["train.ipynb:cell 3:4:5: ACC001 [*] loss handed to backward is never divided by accum_steps"],
    "full": lambda row, col: ["train.ipynb:cell 3:4:5: ACC001 [*] loss handed to backward is never divided by accum_steps",
                              "4 |     loss.backward()"],
    "json": lambda row, col: [("train.ipynb", 3, {"row": 4, "column": 5}, "ACC001")],
    "sarif": lambda row, col: [(
        {"artifactLocation": {"uri": "train.ipynb", "uriBaseId": "%SRCROOT%"},
         "region": {"startLine": row, "startColumn": col, "endLine": row, "endColumn": col + 15}},
        {"notebookCell": 3, "cellRegion": {"startLine": 4, "startColumn": 5, "endLine": 4, "endColumn": 20}},
    )],
    "github": lambda row, col: [
        f"::error file=train.ipynb,line={row},col={col},endLine={row},endColumn={col + 15},title=ACC001"
        "::cell 3, line 4, col 5: loss handed to backward is never divided by accum_steps"],
}


@pytest.mark.parametrize("first_format", ["text", "json"])
def test_same_places_in_every_format_on_a_cache_hit(project, invoke, first_format):
    text = _write_notebook(project)
    row, col = _json_place(text)
    assert invoke("check", "--format", first_format, "train.ipynb").exit_code == 1  # fills the cache
    assert (project / ".accumlint_cache").is_dir()
    for output_format in FORMATS:
        for attempt in ("hit", "hit again"):
            result = invoke("check", "--format", output_format, "train.ipynb")
            assert result.exit_code == 1, (output_format, attempt)
            assert _place(output_format, result.stdout, text) == EXPECTED[output_format](row, col), (
                output_format, attempt)
        uncached = invoke("check", "--no-cache", "--format", output_format, "train.ipynb")
        assert _place(output_format, uncached.stdout, text) == EXPECTED[output_format](row, col)


def test_fix_reaches_a_cell_under_a_python_cell_magic(project, invoke):
    _write_notebook(project)
    result = invoke("check", "--fix", "train.ipynb")
    assert result.exit_code == 0, result.stdout
    source = json.loads((project / "train.ipynb").read_text())["cells"][2]["source"]
    assert source[0] == "%%time\n" and "    (loss / accum_steps).backward()\n" in source


def test_syntax_error_in_a_cell_names_the_cell(project, invoke):
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": ["def (:\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (project / "bad.ipynb").write_text(json.dumps(notebook))
    for _ in range(2):  # the second run is a cache hit
        result = invoke("check", "bad.ipynb")
        assert result.exit_code == 2
        assert result.stderr.startswith("bad.ipynb:cell 1: error: syntax error at 1:5")
    data = json.loads(invoke("check", "--format", "json", "bad.ipynb").stdout)
    assert [(d["code"], d["cell"], d["location"]) for d in data] == [(None, 1, {"row": 1, "column": 5})]
