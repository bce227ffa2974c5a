"""SARIF output: the parts of the 2.1.0 schema GitHub code scanning relies on."""

from __future__ import annotations

import json
import re

import pytest

from accumlint import __version__
from accumlint.model import Edit, FileError, Finding, FixSummary, Location
from accumlint.registry import RULES
from accumlint.reporting.sarif import artifact_uri, render_sarif

# Allowed properties of the objects we emit (the schema sets additionalProperties: false).
ALLOWED = {
    "log": {"$schema", "version", "runs", "inlineExternalProperties", "properties"},
    "run": {"tool", "invocations", "results", "columnKind", "originalUriBaseIds", "artifacts",
            "automationDetails", "properties", "language", "defaultEncoding"},
    "tool": {"driver", "extensions", "properties"},
    "driver": {"name", "version", "semanticVersion", "informationUri", "rules", "organization",
               "fullName", "properties"},
    "rule": {"id", "name", "shortDescription", "fullDescription", "helpUri", "help",
             "defaultConfiguration", "properties"},
    "result": {"ruleId", "ruleIndex", "level", "message", "locations", "fixes", "properties",
               "partialFingerprints", "kind"},
    "location": {"id", "physicalLocation", "message", "properties"},
    "physical": {"artifactLocation", "region", "contextRegion", "properties"},
    "artifact": {"uri", "uriBaseId", "index", "description", "properties"},
    "region": {"startLine", "startColumn", "endLine", "endColumn", "snippet", "message", "properties"},
    "invocation": {"executionSuccessful", "toolExecutionNotifications", "properties"},
    "notification": {"locations", "message", "level", "descriptor", "properties"},
    "fix": {"description", "artifactChanges", "properties"},
    "change": {"artifactLocation", "replacements", "properties"},
    "replacement": {"deletedRegion", "insertedContent", "properties"},
    "content": {"text", "binary", "properties"},
    "message": {"text", "markdown", "id", "arguments", "properties"},
}
LEVELS = {"none", "note", "warning", "error"}


def _keys(obj: dict, kind: str, required: tuple = ()) -> None:
    assert isinstance(obj, dict), kind
    extra = set(obj) - ALLOWED[kind]
    assert not extra, f"{kind} has properties the schema forbids: {extra}"
    for key in required:
        assert key in obj, f"{kind} lacks required {key}"


def _message(obj: dict) -> None:
    _keys(obj, "message")
    assert isinstance(obj.get("text"), str) and obj["text"], "a message needs text"


def _uri(uri: str) -> None:
    assert "\\" not in uri, uri
    assert not re.match(r"^[A-Za-z]:", uri)
    assert not uri.startswith("/"), "uri must be relative to the checkout"


def _region(region: dict) -> None:
    _keys(region, "region", ("startLine",))
    for key in ("startLine", "startColumn", "endLine", "endColumn"):
        assert isinstance(region.get(key, 1), int) and region.get(key, 1) >= 1, key
    assert region.get("endLine", region["startLine"]) >= region["startLine"]


def _physical(location: dict) -> None:
    _keys(location, "location")
    physical = location["physicalLocation"]
    _keys(physical, "physical", ("artifactLocation",))
    _keys(physical["artifactLocation"], "artifact", ("uri",))
    _uri(physical["artifactLocation"]["uri"])
    if "region" in physical:
        _region(physical["region"])


def validate(log: dict) -> None:
    """A structural check of a SARIF 2.1.0 log against the schema's key constraints."""
    _keys(log, "log", ("version", "runs"))
    assert log["version"] == "2.1.0"
    assert log["runs"], "at least one run"
    for run in log["runs"]:
        _keys(run, "run", ("tool",))
        assert run.get("columnKind", "utf16CodeUnits") in {"utf16CodeUnits", "unicodeCodePoints"}
        _keys(run["tool"], "tool", ("driver",))
        driver = run["tool"]["driver"]
        _keys(driver, "driver", ("name",))
        ids = []
        for rule in driver.get("rules", []):
            _keys(rule, "rule", ("id",))
            ids.append(rule["id"])
            if "shortDescription" in rule:
                assert rule["shortDescription"]["text"]
            if "helpUri" in rule:
                assert rule["helpUri"].startswith("https://")
        assert len(ids) == len(set(ids)), "rule ids must be unique"
        for invocation in run.get("invocations", []):
            _keys(invocation, "invocation", ("executionSuccessful",))
            for note in invocation.get("toolExecutionNotifications", []):
                _keys(note, "notification", ("message",))
                _message(note["message"])
                for location in note.get("locations", []):
                    _physical(location)
        for result in run.get("results", []):
            _keys(result, "result", ("message",))
            _message(result["message"])
            assert result.get("level", "warning") in LEVELS
            if "ruleIndex" in result:
                assert ids[result["ruleIndex"]] == result["ruleId"], "ruleIndex points at its rule"
            for location in result.get("locations", []):
                _physical(location)
            for fix in result.get("fixes", []):
                _keys(fix, "fix", ("artifactChanges",))
                for change in fix["artifactChanges"]:
                    _keys(change, "change", ("artifactLocation", "replacements"))
                    for replacement in change["replacements"]:
                        _keys(replacement, "replacement", ("deletedRegion",))
                        _region(replacement["deletedRegion"])
                        _keys(replacement.get("insertedContent", {}), "content")


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
    first = run["results"][0]
    assert first["ruleId"] == "ACC001" and first["level"] == "error"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "pkg/train.py"
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
    with pytest.raises(AssertionError):
        validate(log)
    log = json.loads(render_sarif([_finding()], []))
    log["runs"][0]["results"][0]["ruleIndex"] = 3
    with pytest.raises(AssertionError):
        validate(log)


def test_uri_is_relative_with_forward_slashes(tmp_path):
    assert artifact_uri(str(tmp_path / "a" / "b.py"), root=str(tmp_path)) == "a/b.py"
    assert artifact_uri("a\\b.py".replace("\\", "/"), root=".") == "a/b.py"
    assert artifact_uri("./x/../y.py", root=".") == "y.py"


def test_notebook_cell_is_named_not_mixed_into_the_uri(tmp_path):
    finding = _finding(str(tmp_path / "nb.ipynb") + ":cell 4")
    log = json.loads(render_sarif([finding], [], root=str(tmp_path)))
    validate(log)
    result = log["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "nb.ipynb"
    assert result["properties"] == {"notebookCell": 4}


def test_non_ascii_message_round_trips():
    finding = Finding("ACC002", "perte gardée: ∑ loss", "t.py", Location(1, 1), Location(1, 2))
    log = json.loads(render_sarif([finding], []))
    validate(log)
    assert log["runs"][0]["results"][0]["message"]["text"] == "perte gardée: ∑ loss"
