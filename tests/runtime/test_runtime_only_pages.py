"""A runtime-only rule's catalog page is honoured at run time: its bad example, run under
`accumlint run --verify`, is reported with its code and nothing else; its fixed example is
clean. (tests/test_catalog.py checks that the static checker is silent on both.)"""

import json
import re
from pathlib import Path

import pytest

from accumlint.registry import RUNTIME_ONLY
from accumlint.runtime.runner import RunConfig, run

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"
_BLOCK = re.compile(r"^## (Example|Use instead)\n.*?^```python\n(.*?)^```", re.M | re.S)


def _examples(code):
    return {title: body for title, body in _BLOCK.findall((RULES_DIR / f"{code}.md").read_text())}


@pytest.mark.parametrize("code", sorted(info.code for info in RUNTIME_ONLY))
def test_page_examples_under_verify(tmp_path, capsys, code):
    examples = _examples(code)
    assert set(examples) == {"Example", "Use instead"}
    results = {}
    for title, body in examples.items():
        script = tmp_path / f"{title.replace(' ', '_')}.py"
        script.write_text(body)
        report = tmp_path / f"{title.replace(' ', '_')}.json"
        status = run(RunConfig(str(script), [], report_path=str(report), verify_windows=4))
        results[title] = (status, json.loads(report.read_text()), capsys.readouterr().out)
    status, findings, out = results["Example"]
    assert status == 1 and {f["code"] for f in findings} == {code}, out
    status, findings, out = results["Use instead"]
    assert (status, findings) == (0, []), out
    assert "relative error" in out and "(ok)" in out  # windows were compared, not skipped
