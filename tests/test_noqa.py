"""`# noqa` seen from the command line: it hides findings and keeps --fix off those lines."""

from __future__ import annotations

import pytest

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
        ("  # noqa: ACC006", False),
        ("  # noqa: ACC0011", False),
        ("  # no qa", False),
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


def test_noqa_on_another_line_does_not_suppress(project, invoke):
    (project / "t.py").write_text("# noqa: ACC001\n" + BUGGY)
    assert "t.py:4:5: ACC001" in invoke("check", "t.py").stdout


def test_noqa_for_one_code_keeps_the_others(project, invoke):
    (project / "t.py").write_text("ddp.no_sync_missing(); loss.backward()  # noqa: ACC001\n")
    out = invoke("check", "t.py").stdout
    assert "ACC009" in out and "ACC001" not in out
