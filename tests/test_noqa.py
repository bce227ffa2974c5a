"""`# noqa`: it hides findings and keeps --fix off those lines; a malformed one hides nothing and
is warned about; `# accumlint: noqa` silences a whole file (or some codes in it)."""

from __future__ import annotations

import json

import pytest

from accumlint import noqa
from cli_samples import BUGGY

pytestmark = pytest.mark.usefixtures("fake_rules")

LINE = "    loss.backward()"


@pytest.mark.parametrize(
    "comment, suppressed",
    [
        ("  # noqa", True),
        ("  # noqa: ACC001", True),
        ("  # NOQA:ACC001", True),
        ("  # noqa: ACC006, ACC001", True),
        ("  # noqa: ACC006 ACC001", True),
        ("  # noqa  # why: the loss is a sum on purpose", True),
        ("  # noqa: ACC006", False),
        ("  # noqa: ACC0011", False),
        ("  # no qa", False),
        ("  # noqa ACC001", False),  # no colon: not a blanket noqa either (a warning says so)
        ("  # noqa acc001", False),
        ("  # noqa - the sum over micro-batches is intended", True),  # an explanation, no code
        ("  # noqa (k is 1 in this script)", True),
        ("  # noqa: acc001", False),
        ("  # noqa:", False),
    ],
)
def test_noqa_comment(project, invoke, comment, suppressed):
    path = project / "t.py"
    text = BUGGY.replace(LINE, LINE + comment)
    path.write_text(text)
    result = invoke("check", "t.py")
    assert ("ACC001" in result.stdout) is not suppressed
    assert result.exit_code == (0 if suppressed else 1)
    invoke("check", "--fix", "t.py")
    assert (path.read_text() == text) is suppressed


@pytest.mark.parametrize("line, warning", [
    ("x = 1  # noqa ACC001", "invalid `# noqa` directive (it silences nothing): expected `:`"),
    ("x = 1  # noqa E203, ACC001", "invalid `# noqa` directive (it silences nothing): expected `:`"),
    ("x = 1  # noqa: acc001", "found `acc001`"),
    ("x = 1  # noqa: ACC999, E501", "unknown rule code `ACC999`"),
    ("x = 1  # noqa: E501, ACC01", "unknown rule code `ACC01`"),
    ("# accumlint: noqa ACC001", "invalid `# accumlint: noqa` directive"),
])
def test_malformed_noqa_is_warned_about_with_its_place(project, invoke, line, warning):
    (project / "t.py").write_text("y = 0\n" + line + "\n")
    for _ in range(2):  # the second run answers from the cache, warnings included
        result = invoke("check", "t.py")
        warnings = [w for w in result.stderr.splitlines() if w.startswith("warning:")]
        assert len(warnings) == 1 and warnings[0].startswith("warning: t.py:2: ")
        assert warning in warnings[0]


def test_well_formed_noqa_draws_no_warning(project, invoke):
    (project / "t.py").write_text("a = 1  # noqa\nb = 2  # noqa: ACC001, E501, F401\nc = '# noqa'  # noqa: ACC009\n")
    assert "warning" not in invoke("check", "t.py").stderr


# Another tool's directive on the buggy line: none of ours is named, so it silences nothing of
# ours and is not ours to warn about (flake8, ruff and pylint read the same comment).
OTHER_TOOLS = ["  # noqa E203", "  # noqa: max-complexity", "  # noqa: E501,W291", "  # noqa: E501 W291",
               "  # NOQA:E501", "  # noqa: e501", "  # noqa: C901 - too complex to split",
               "  # noqa: line-too-long, max-complexity", "  # noqa:", "  # noqa: - why"]
# Ours beside theirs: our code counts.
MIXED = ["  # noqa: E501, ACC001", "  # noqa: E501 ACC001", "  # noqa:W291,ACC001 - summed on purpose",
         "  # noqa: max-complexity, ACC001", "  # noqa: ACC001, E501"]
# Ours and malformed, also when beside theirs: warned about, and silencing nothing.
OURS_MALFORMED = [("  # noqa E203, ACC001", "expected `:`"), ("  # noqa ACC1", "expected `:`"),
                  ("  # noqa: E501, ACC01", "unknown rule code `ACC01`"),
                  ("  # noqa: E501, acc001", "found `acc001`"), ("  # noqa: ACC", "unknown rule code `ACC`")]


@pytest.mark.parametrize("comment, silenced, warning", [
    *[(comment, False, None) for comment in OTHER_TOOLS],
    *[(comment, True, None) for comment in MIXED],
    *[(comment, False, warning) for comment, warning in OURS_MALFORMED],
    ("  # noqa", True, None),  # bare: every code, ours included
])
def test_noqa_shared_with_other_linters(project, invoke, comment, silenced, warning):
    path = project / "t.py"
    text = BUGGY.replace(LINE, LINE + comment)
    path.write_text(text)
    result = invoke("check", "t.py")
    assert ("t.py:3:5: ACC001" in result.stdout) is not silenced
    assert result.exit_code == (0 if silenced else 1)
    warnings = [w for w in result.stderr.splitlines() if w.startswith("warning:")]
    if warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith("warning: t.py:3: ") and warning in warnings[0]
    invoke("check", "--fix", "t.py")
    assert (path.read_text() == text) is silenced


def test_other_linters_noqa_lines_draw_no_warning_anywhere(project, invoke):
    """A file full of other tools' directives, as real repositories have them: not one warning."""
    lines = [f"x{i} = 1{comment}" for i, comment in enumerate(OTHER_TOOLS)]
    (project / "t.py").write_text("\n".join(lines) + "\n")
    result = invoke("check", "t.py")
    assert result.exit_code == 0 and result.stderr == ""


def test_noqa_on_another_line_does_not_suppress(project, invoke):
    (project / "t.py").write_text("# noqa: ACC001\n" + BUGGY)
    assert "t.py:4:5: ACC001" in invoke("check", "t.py").stdout


def test_noqa_for_one_code_keeps_the_others(project, invoke):
    (project / "t.py").write_text("ddp.no_sync_missing(); loss.backward()  # noqa: ACC001\n")
    out = invoke("check", "t.py").stdout
    assert "ACC009" in out and "ACC001" not in out


BOTH = BUGGY + "model.no_sync_missing()\n"


@pytest.mark.parametrize("header, remaining", [
    ("# accumlint: noqa\n", []),
    ("#accumlint:noqa\n", []),
    ("# accumlint: noqa: ACC001\n", ["ACC009"]),
    ("# accumlint: noqa: ACC001, ACC009\n", []),
    ("x = 1  # accumlint: noqa\n", ["ACC001", "ACC009"]),  # file-level only on a line of its own
])
def test_file_level_noqa(project, invoke, header, remaining):
    path = project / "t.py"
    path.write_text(header + BOTH)
    result = invoke("check", "--format", "json", "t.py")
    assert [d["code"] for d in json.loads(result.stdout)] == remaining
    invoke("check", "--fix", "t.py")
    assert ("(loss / accum_steps)" in path.read_text()) is ("ACC001" in remaining)


def test_file_level_noqa_in_a_notebook_cell_covers_the_notebook(project, invoke):
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
             for source in ("# accumlint: noqa: ACC001\n", BOTH)]
    (project / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    data = json.loads(invoke("check", "--format", "json", "nb.ipynb").stdout)
    assert [(d["code"], d["cell"]) for d in data] == [("ACC009", 2)]


def test_parser_units():
    assert noqa.suppressed("x  # noqa", "ACC001")
    assert not noqa.suppressed("x  # noqa ACC001", "ACC001")
    assert noqa.suppressed("x  # noqa - kept on purpose", "ACC002")
    assert noqa.problems("x  # noqa - kept on purpose\ny  # noqa because of E501\n") == []
    # Codes then an explanation: the codes count, the text is no code.
    assert noqa.suppressed("x  # noqa: ACC002 - kept on purpose", "ACC002")
    assert noqa.suppressed("x  # noqa: BLE001, ACC002 -- why", "ACC002")
    assert not noqa.suppressed("x  # noqa: ACC001 - why", "ACC002")
    assert noqa.problems("x  # noqa: BLE001 -- never breaks training\ny  # noqa: B006 \u2014 why\n") == []
    assert noqa.problems("x  # noqa: ACC001, acc002 - why\n")[0][1].endswith("found `acc002`")
    assert noqa.problems("x  # noqa: - why\n") == []  # names no code of ours: not ours to judge
    assert noqa.suppressed("x  # noqa:ACC001,ACC002", "ACC002")
    assert noqa.file_directive("# accumlint: noqa: ACC001\n# accumlint: noqa: ACC005\n").codes == {"ACC001", "ACC005"}
    assert noqa.file_directive("x = 1  # noqa\n") is None
    assert noqa.problems("ok  # noqa\nbad  # noqa ACC1\ns = '# noqa x'\n") == [
        (2, "invalid `# noqa` directive (it silences nothing): expected `:` followed by a comma-separated "
            "list of codes (e.g., `# noqa: ACC001, ACC005`)")]
