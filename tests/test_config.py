"""[tool.accumlint] in pyproject.toml: lookup, select/ignore layering, exclude, per-file-ignores,
and one clear line for every bad value."""

from __future__ import annotations

import os

import pytest

from cli_samples import BUGGY

pytestmark = pytest.mark.usefixtures("fake_rules")

BOTH = BUGGY + "model.no_sync_missing()\n"  # fake ACC001 on line 3, fake ACC009 on line 7


def codes(result) -> list[str]:
    return [line.split()[1] for line in result.stdout.splitlines() if ": ACC" in line]


def pyproject(directory, body: str):
    (directory / "pyproject.toml").write_text(body)


def test_select_and_ignore_from_pyproject(project, invoke):
    (project / "t.py").write_text(BOTH)
    pyproject(project, '[tool.accumlint]\nselect = ["ACC0"]\nignore = ["ACC009"]\n')
    assert codes(invoke("check", "t.py")) == ["ACC001"]


def test_config_is_found_by_walking_up_from_the_checked_path(project, invoke):
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    (sub / "t.py").write_text(BOTH)
    pyproject(project, '[tool.accumlint]\nignore = ["ACC001"]\n')
    pyproject(project / "src", '[project]\nname = "no-table-here"\n')  # skipped: no [tool.accumlint]
    assert codes(invoke("check", "src/pkg/t.py")) == ["ACC009"]
    assert "using configuration" in invoke("check", "-v", "src").stderr


def test_lookup_stops_at_the_project_root(tmp_path, invoke, monkeypatch):
    pyproject(tmp_path, '[tool.accumlint]\nignore = ["ACC"]\n')  # outside the repository
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "t.py").write_text(BOTH)
    monkeypatch.chdir(repo)
    assert codes(invoke("check", "t.py")) == ["ACC001", "ACC009"]


def test_command_line_select_replaces_config_and_ignore_removes(project, invoke):
    (project / "t.py").write_text(BOTH)
    pyproject(project, '[tool.accumlint]\nselect = ["ACC009"]\n')
    assert codes(invoke("check", "t.py")) == ["ACC009"]
    assert codes(invoke("check", "--select", "ACC001", "t.py")) == ["ACC001"]
    assert codes(invoke("check", "--ignore", "ACC009", "t.py")) == []


def test_exclude_globs_skip_files_and_folders_and_named_files_only_with_force_exclude(project, invoke):
    pyproject(project, '[tool.accumlint]\nexclude = ["legacy/", "*_gen.py"]\n')
    for name in ("legacy/old.py", "model_gen.py", "src/legacy/deep.py", "keep.py"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(BUGGY)
    result = invoke("check", ".")
    assert [line.split(":")[0] for line in result.stdout.splitlines() if ": ACC" in line] == ["keep.py"]
    named = invoke("check", "model_gen.py")  # named on the command line: checked, as ruff does
    assert named.exit_code == 1 and "model_gen.py:3:5: ACC001" in named.stdout
    forced = invoke("check", "--force-exclude", "model_gen.py", "legacy/old.py")  # as pre-commit runs it
    assert forced.exit_code == 0 and "No Python files found" in forced.stderr
    folder = invoke("check", "legacy")  # a named folder is walked too
    assert "legacy/old.py:3:5: ACC001" in folder.stdout


@pytest.mark.parametrize("pattern, excluded", [
    ("/legacy", ["legacy/old.py"]),  # anchored at the config's folder
    ("legacy", ["legacy/old.py", "src/legacy/deep.py"]),  # any depth
    ("a/**/b", ["a/b/x.py", "a/m/b/y.py"]),  # ** also matches no folder at all
    ("*.ipynb", ["nb.ipynb"]),
    ("src/**/*.py", ["src/legacy/deep.py"]),
])
def test_exclude_patterns_are_gitignore_style(project, invoke, pattern, excluded):
    pyproject(project, f'[tool.accumlint]\nexclude = ["{pattern}"]\n')
    files = ["legacy/old.py", "src/legacy/deep.py", "a/b/x.py", "a/m/b/y.py", "nb.ipynb", "keep.py"]
    for name in files:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(BUGGY if name.endswith(".py") else "{}")
    result = invoke("check", "-v", ".")
    skipped = sorted(line.split("note: skipped ")[1].split(":")[0] for line in result.stderr.splitlines()
                     if "note: skipped" in line)
    # A folder that matches is skipped whole (not entered); report what it held.
    covered = sorted(f for f in files if any(f == s or f.startswith(s + "/") for s in skipped))
    assert covered == sorted(excluded)
    assert "matches no file" not in result.stderr


def test_patterns_that_match_nothing_are_warned_about(project, invoke):
    pyproject(project, '[tool.accumlint]\nexclude = ["legacy", "nothing_here/"]\n'
                       '[tool.accumlint.per-file-ignores]\n"tests/*" = ["ACC001"]\n"keep.py" = ["ACC001"]\n')
    (project / "legacy").mkdir()
    (project / "keep.py").write_text(BUGGY)
    result = invoke("check", ".")
    warned = [line for line in result.stderr.splitlines() if "matches no file" in line]
    assert len(warned) == 2
    assert "exclude pattern 'nothing_here/'" in warned[0] and "per-file-ignores pattern 'tests/*'" in warned[1]
    # A run on one file (pre-commit) cannot tell: no warning.
    assert "matches no file" not in invoke("check", "keep.py").stderr


def test_gitignored_folders_are_not_walked_unless_named(project, invoke):
    (project / ".gitignore").write_text("wandb/\noutputs\n*.bak.py\n")
    for name in ("wandb/run-1/files/train.py", "outputs/copy.py", "old.bak.py", "train.py", "sub/outputs/x.py"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(BUGGY)
    (project / "sub" / ".gitignore").write_text("!outputs\n")  # a deeper file re-includes
    found = [line.split(":")[0] for line in invoke("check", ".").stdout.splitlines() if ": ACC" in line]
    assert found == ["sub/outputs/x.py", "train.py"]
    assert invoke("check", "--no-respect-gitignore", ".").stdout.count(": ACC001") == 5
    assert invoke("check", "outputs/copy.py").exit_code == 1  # named: checked
    assert invoke("check", "--force-exclude", "outputs/copy.py").exit_code == 0


def test_per_file_ignores(project, invoke):
    pyproject(project, '[tool.accumlint.per-file-ignores]\n"tests/*" = ["ACC001"]\n"scripts/*.py" = ["ACC0"]\n')
    for name in ("tests/t.py", "scripts/s.py", "main.py"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(BOTH)
    out = invoke("check", ".").stdout
    found = sorted((line.split(":")[0], line.split()[1]) for line in out.splitlines() if ": ACC" in line)
    assert found == [
        ("main.py", "ACC001"),
        ("main.py", "ACC009"),
        (os.path.join("tests", "t.py"), "ACC009"),
    ]


def test_explicit_config_file(project, invoke):
    (project / "t.py").write_text(BOTH)
    (project / "accumlint.toml").write_text('select = ["ACC009"]\n')
    assert codes(invoke("check", "--config", "accumlint.toml", "t.py")) == ["ACC009"]


@pytest.mark.parametrize(
    "body, expected",
    [
        ('[tool.accumlint]\nselect = ["ACC999"]\n', "pyproject.toml: error: [tool.accumlint] select: unknown rule selector 'ACC999'"),
        ('[tool.accumlint]\nignore = 3\n', "pyproject.toml: error: [tool.accumlint] ignore: expected a list of strings"),
        ('[tool.accumlint]\nselct = ["ACC001"]\n', "pyproject.toml: error: [tool.accumlint] selct: unknown key"),
        ('[tool.accumlint]\nexclude = [1]\n', "pyproject.toml: error: [tool.accumlint] exclude: expected a list of strings"),
        ('[tool.accumlint.per-file-ignores]\n"a.py" = ["NOPE1"]\n', "per-file-ignores.'a.py': unknown rule selector 'NOPE1'"),
        ('[tool.accumlint\nselect = 1\n', "pyproject.toml: error: invalid TOML:"),
    ],
    ids=["unknown-code", "wrong-type", "unknown-key", "exclude-type", "per-file-code", "bad-toml"],
)
def test_bad_config_is_one_clear_line_and_exit_two(project, invoke, body, expected):
    (project / "t.py").write_text(BUGGY)
    pyproject(project, body)
    result = invoke("check", "t.py")
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert expected in result.stderr
    assert result.stdout == ""


def test_missing_explicit_config_is_an_error(project, invoke):
    (project / "t.py").write_text(BUGGY)
    result = invoke("check", "--config", "nope.toml", "t.py")
    assert result.exit_code == 2
    assert "nope.toml: error: config file not found" in result.stderr
