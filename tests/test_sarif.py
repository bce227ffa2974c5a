"""SARIF output, validated against the official SARIF 2.1.0 JSON schema (tests/data), formats
included: a URI must be a valid uri-reference."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from accumlint import __version__, catalog
from accumlint.model import Edit, FileError, Finding, FixSummary, Location
from accumlint.registry import RULES
from accumlint.reporting.sarif import ROOT_ID, artifact_uri, render_sarif

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker())


def validate(log: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    # What the schema cannot say: a ruleIndex points at its own rule.
    for run in log["runs"]:
        ids = [rule["id"] for rule in run["tool"]["driver"].get("rules", [])]
        for result in run.get("results", []):
            if "ruleIndex" in result:
                assert ids[result["ruleIndex"]] == result["ruleId"]


def _finding(filename="train.py", code="ACC001", fix=None) -> Finding:
    return Finding(code, "loss is not divided by accum_steps", filename, Location(3, 5),
                   Location(3, 20), fix=fix, url=RULES[code].url)


def test_log_with_findings_fix_and_error_is_valid(tmp_path):
    fix = FixSummary("divide the loss", "safe",
                     (Edit("    (loss / accum_steps).backward()\n", Location(3, 1), Location(4, 1)),))
    log = json.loads(render_sarif(
        [_finding(str(tmp_path / "pkg" / "train.py"), fix=fix), _finding(str(tmp_path / "b.py"), "ACC005")],
        [FileError(str(tmp_path / "bad.py"), "syntax error at 1:5: invalid syntax")],
        root=str(tmp_path),
    ))
    validate(log)
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "accumlint" and driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    assert {rule["id"] for rule in driver["rules"]} == set(RULES)
    acc001 = next(rule for rule in driver["rules"] if rule["id"] == "ACC001")
    assert acc001["name"] == "unscaled-accumulated-loss"
    assert acc001["helpUri"] == RULES["ACC001"].url
    # Code scanning shows these on the rule's page: the catalog's own words.
    assert acc001["fullDescription"]["text"].startswith("Flags the backward call")
    assert acc001["help"]["markdown"] == catalog.page("ACC001")
    first = run["results"][0]
    assert first["ruleId"] == "ACC001" and first["level"] == "error"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/train.py", "uriBaseId": ROOT_ID}
    assert run["originalUriBaseIds"][ROOT_ID]["uri"] == tmp_path.as_uri() + "/"
    assert location["region"] == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 20}
    replacement = first["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"].strip() == "(loss / accum_steps).backward()"
    assert "fixes" not in run["results"][1]
    assert run["invocations"][0]["executionSuccessful"] is False
    note = run["invocations"][0]["toolExecutionNotifications"][0]
    assert note["message"]["text"].startswith("syntax error")
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad.py"


def test_clean_run_is_valid_and_successful():
    log = json.loads(render_sarif([], []))
    validate(log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_validator_rejects_what_the_schema_rejects():
    log = json.loads(render_sarif([_finding()], []))
    log["runs"][0]["results"][0]["severity"] = "high"
    with pytest.raises(AssertionError, match="severity"):
        validate(log)
    log = json.loads(render_sarif([_finding()], []))
    log["runs"][0]["results"][0]["ruleIndex"] = 3
    with pytest.raises(AssertionError):
        validate(log)
    log = json.loads(render_sarif([_finding()], []))
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "a b.py"
    with pytest.raises(AssertionError, match="uri-reference"):
        validate(log)


def test_uri_is_relative_to_the_root_with_forward_slashes(tmp_path):
    assert artifact_uri(str(tmp_path / "a" / "b.py"), root=str(tmp_path)) == "a/b.py"
    assert artifact_uri("./x/../y.py", root=".") == "y.py"


@pytest.mark.parametrize("name, uri", [
    ("my scripts/train #2.py", "my%20scripts/train%20%232.py"),
    ("données/entraîner.py", "donn%C3%A9es/entra%C3%AEner.py"),
    ("100%.py", "100%25.py"),
])
def test_uris_are_percent_encoded_and_valid(tmp_path, name, uri):
    log = json.loads(render_sarif([_finding(str(tmp_path / name))], [FileError(str(tmp_path / name), "x")],
                                  root=str(tmp_path)))
    validate(log)
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == uri


def test_a_file_outside_the_root_gets_an_absolute_file_uri(tmp_path):
    (tmp_path / "repo").mkdir()
    log = json.loads(render_sarif([_finding(str(tmp_path / "elsewhere" / "t.py"))], [], root=str(tmp_path / "repo")))
    validate(log)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": (tmp_path / "elsewhere" / "t.py").as_uri()}


def test_root_defaults_to_the_repository_root(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    assert artifact_uri("train.py") == "src/train.py"


def test_notebook_cell_is_data_and_the_region_points_into_the_json(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["x = 1\n", "loss.backward()\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(notebook, indent=1)
    (tmp_path / "nb.ipynb").write_text(text)
    fix = FixSummary("divide", "safe", (Edit("(loss / k)", Location(2, 1), Location(2, 5)),))
    finding = Finding("ACC001", "msg", str(tmp_path / "nb.ipynb"), Location(2, 1), Location(2, 16), fix=fix, cell=1)
    log = json.loads(render_sarif([finding], [FileError(str(tmp_path / "nb.ipynb"), "bad", cell=1)],
                                  root=str(tmp_path)))
    validate(log)
    result = log["runs"][0]["results"][0]
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "nb.ipynb"
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "loss.backward" in row)
    column = text.splitlines()[line - 1].index("loss.backward") + 1
    assert physical["region"] == {"startLine": line, "startColumn": column, "endLine": line, "endColumn": column + 15}
    assert result["properties"] == {"notebookCell": 1, "cellRegion": {
        "startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 16}}
    assert "fixes" not in result  # cell-relative edits would land on the wrong JSON text
    note = log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]
    assert note["properties"] == {"notebookCell": 1}


def test_non_ascii_message_round_trips():
    finding = Finding("ACC002", "perte gardée: ∑ loss", "t.py", Location(1, 1), Location(1, 2))
    log = json.loads(render_sarif([finding], []))
    validate(log)
    assert log["runs"][0]["results"][0]["message"]["text"] == "perte gardée: ∑ loss"
