"""`accumlint rule`: catalog pages from the checkout or the wheel, the rule list, packaging."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path


from accumlint import catalog
from accumlint.registry import RULES

ROOT = Path(__file__).resolve().parent.parent


def test_rule_prints_the_catalog_page(invoke):
    result = invoke("rule", "ACC001")
    assert result.exit_code == 0
    assert result.stdout == (ROOT / "rules" / "ACC001.md").read_text(encoding="utf-8")


def test_rule_accepts_lowercase_codes_and_names(invoke):
    expected = invoke("rule", "ACC005").stdout
    assert invoke("rule", "acc005").stdout == expected
    assert invoke("rule", "partial-window-dropped").stdout == expected


def test_unknown_rule_is_exit_two_with_one_line(invoke):
    result = invoke("rule", "ACC999")
    assert result.exit_code == 2
    assert result.stderr == "accumlint rule: error: unknown rule 'ACC999' (see `accumlint rule --all`)\n"


def test_rule_without_code_or_all_is_a_usage_error(invoke):
    assert invoke("rule").exit_code == 2


def test_missing_page_falls_back_to_the_registry(invoke, monkeypatch, tmp_path):
    monkeypatch.setattr(catalog, "PAGES_DIR", "no_pages_here")
    monkeypatch.setattr(catalog, "SOURCE_DIR", tmp_path)
    result = invoke("rule", "ACC009")
    assert result.exit_code == 0
    assert "ddp-sync-every-micro-step" in result.stdout
    assert RULES["ACC009"].summary in result.stdout
    assert "page for ACC009 is missing" in result.stderr


def test_rule_all_lists_code_name_fix_and_summary(invoke):
    lines = invoke("rule", "--all").stdout.splitlines()
    assert len(lines) == len(RULES)
    assert lines[0].split()[:3] == ["ACC001", "unscaled-accumulated-loss", "safe"]
    assert lines[0].endswith(RULES["ACC001"].summary)
    assert lines[8].split()[:3] == ["ACC009", "ddp-sync-every-micro-step", "none"]
    data = json.loads(invoke("rule", "--all", "--format", "json").stdout)
    assert [row["code"] for row in data] == sorted(RULES)


def test_every_subpackage_is_listed_for_the_wheel():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in (ROOT / "accumlint").rglob("__init__.py")
    }
    assert on_disk <= set(config["packages"]), "add the missing subpackages to [tool.setuptools] packages"
    assert config["package-dir"]["accumlint.rule_pages"] == "rules"


def test_a_built_wheel_carries_the_pages(tmp_path):
    """Build a real wheel (no network: the venv's setuptools) and read a page from it alone."""
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".accumlint_cache", "tests"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
         str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("accumlint-*.whl")
    assert "accumlint/rule_pages/ACC001.md" in zipfile.ZipFile(wheel).namelist()
    env = {**os.environ, "PYTHONPATH": str(wheel)}  # the wheel alone, imported as a zip
    shown = subprocess.run([sys.executable, "-m", "accumlint", "rule", "ACC001"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""
    assert shown.stdout == (ROOT / "rules" / "ACC001.md").read_text(encoding="utf-8")
