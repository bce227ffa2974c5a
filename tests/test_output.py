"""--format json (ruff's fields, stable order), statistics as JSON, and the format dispatch."""

from __future__ import annotations

import json
import os

import pytest

from cli_samples import BUGGY

pytestmark = pytest.mark.usefixtures("fake_rules")

TWO_FILES = {"b.py": BUGGY, "a.py": "model.no_sync_missing()\n" + BUGGY}


def _write(project):
    for name, text in TWO_FILES.items():
        (project / name).write_text(text)


def test_json_has_ruffs_fields_and_a_deterministic_order(project, invoke):
    _write(project)
    result = invoke("check", "--format", "json", ".")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [(d["filename"].rsplit("/", 1)[-1], d["location"]["row"], d["code"]) for d in data] == [
        ("a.py", 1, "ACC009"),
        ("a.py", 4, "ACC001"),
        ("b.py", 3, "ACC001"),
    ]
    first_fix = data[1]
    assert set(first_fix) >= {"code", "message", "filename", "location", "end_location", "fix", "url"}
    assert first_fix["filename"] == str(project / "a.py")
    assert first_fix["location"] == {"row": 4, "column": 5}
    assert first_fix["end_location"] == {"row": 4, "column": 20}
    assert first_fix["url"].endswith("/rules/ACC001.md")
    assert first_fix["fix"] == {
        "applicability": "safe",
        "message": "Divide the loss by `accum_steps` at the backward call",
        "edits": [
            {
                "content": "(loss / accum_steps)",
                "location": {"row": 4, "column": 5},
                "end_location": {"row": 4, "column": 9},
            }
        ],
    }
    assert data[0]["fix"] is None


def test_json_of_a_clean_run_is_an_empty_list(project, invoke):
    (project / "ok.py").write_text("x = 1\n")
    result = invoke("check", "--format", "json", "ok.py")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


def test_json_lists_files_that_could_not_be_checked(project, invoke):
    (project / "bad.py").write_text("x = 1\ndef (:\n")
    result = invoke("check", "--format", "json", "bad.py", "missing.py")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert [(d["code"], os.path.basename(d["filename"]), d["location"], d["message"].split(":")[0]) for d in data] == [
        (None, "bad.py", {"row": 2, "column": 5}, "syntax error at 2"),
        (None, "missing.py", {"row": 1, "column": 1}, "No such file or directory"),
    ]
    assert data[0]["cell"] is None and data[0]["fix"] is None
    assert result.stderr.startswith("bad.py: error: syntax error")


def test_json_after_fix_lists_what_remains(project, invoke):
    _write(project)
    data = json.loads(invoke("check", "--fix", "--format", "json", ".").stdout)
    assert [d["code"] for d in data] == ["ACC009"]


def test_statistics_as_json(project, invoke):
    _write(project)
    data = json.loads(invoke("check", "--statistics", "--format", "json", ".").stdout)
    assert data == [
        {"code": "ACC001", "name": "unscaled-accumulated-loss", "count": 2, "fixable": True},
        {"code": "ACC009", "name": "ddp-sync-every-micro-step", "count": 1, "fixable": False},
    ]


def test_every_registered_format_is_offered_and_renders(project, invoke):
    from accumlint.reporting import FORMATS

    _write(project)
    assert {"text", "json", "sarif", "github"} <= set(FORMATS)
    for name in FORMATS:
        result = invoke("check", "--format", name, ".")
        assert result.exit_code == 1, name
        assert "ACC001" in result.stdout, name
