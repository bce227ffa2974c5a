"""`accumlint run --verify`: the comparison with the whole window's gradient, the rule that
explains a difference, and honesty where it cannot compare."""

import json
import os
import textwrap

import pytest

from accumlint.runtime.runner import RunConfig, run
from accumlint.runtime.verify import classify
from runtime_checks import SCENARIOS, control_path

BY_NAME = {s.name: s for s in SCENARIOS}
SAMPLES = os.path.join(os.path.dirname(control_path("gan")), "..", "samples")


def _verify(tmp_path, capsys, script, env=None, monkeypatch=None):
    if env and monkeypatch:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
    report = tmp_path / "r.json"
    status = run(RunConfig(script, [], report_path=str(report), verify_windows=4))
    return status, json.loads(report.read_text()), capsys.readouterr().out


def test_classify_names_the_rule():
    assert classify([1.0, 1.0], [8, 8], ["mean", "mean"], 0.0) == "ok"
    assert classify([4.0] * 4, [8] * 4, ["mean"] * 4, 3.0) == "undivided"
    assert classify([0.25] * 4, [8] * 4, ["mean"] * 4, 0.75) == "overdivided"
    # means over 12 and 3 tokens, both divided by k: a term of the short one weighs 4x more
    assert classify([15 / 24, 15 / 6], [12, 3], ["mean", "mean"], 0.5) == "normalisation"
    assert classify([0.5, 1.7], [8, 8], ["mean", "mean"], 0.4) == "unexplained"


def test_token_means_over_uneven_counts_are_acc013(tmp_path, capsys):
    script = os.path.join(SAMPLES, "token_mean_per_micro_batch.py")
    status, findings, out = _verify(tmp_path, capsys, script)
    (finding,) = findings
    assert finding["code"] == "ACC013" and status == 1
    table = finding["evidence"]["table"]
    assert table["rows"][0][1] == [12, 3, 9, 5]
    assert all(e > 0.3 for e in finding["evidence"]["relative_error"])
    assert "relative error" in out


def test_window_token_count_normalisation_is_clean(tmp_path, capsys, monkeypatch):
    script = os.path.join(SAMPLES, "token_mean_per_micro_batch.py")
    status, findings, out = _verify(tmp_path, capsys, script, {"ACC_FIXED": "1"}, monkeypatch)
    assert (status, findings) == (0, [])
    assert out.count("(ok)") == 4


@pytest.mark.parametrize("name, code, ratio", [("acc001_not_divided", "ACC001", 4.0),
                                               ("acc010_double_divided", "ACC010", 0.25)])
def test_verify_agrees_with_the_probe(tmp_path, capsys, name, code, ratio):
    status, findings, out = _verify(tmp_path, capsys, BY_NAME[name].path("buggy"))
    assert [f["code"] for f in findings] == [code]  # one finding: the probe's, not a second
    kind = "undivided" if code == "ACC001" else "overdivided"
    assert out.count(f"({kind})") == 4
    status, findings, out = _verify(tmp_path, capsys, BY_NAME[name].path("fixed"))
    assert findings == [] and out.count("(ok)") == 4


def test_what_it_cannot_compare_is_said_never_flagged(tmp_path, capsys):
    # label smoothing (two loss terms), BatchNorm, dropout, an uneven last window
    status, findings, out = _verify(tmp_path, capsys, control_path("batchnorm_uneven"))
    assert (status, findings) == (0, [])
    assert "--verify skipped a backward whose loss is not one mean or sum" in out
    assert "--verify compared no window: nothing was verified" in out


def test_batch_norm_is_named_in_a_note(tmp_path, capsys):
    script = tmp_path / "bn.py"
    script.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(18):
            n = 3 if i % 3 == 2 else 8  # uneven micro-batches, means divided by k: ACC013-like
            (model(torch.randn(n, 4)).pow(2).mean() / 3).backward()
            if (i + 1) % 3 == 0:
                opt.step()
                opt.zero_grad()
    """))
    report = tmp_path / "r.json"
    run(RunConfig(str(script), [], report_path=str(report), verify_windows=4))
    out = capsys.readouterr().out
    assert "the model has BatchNorm" in out
    (finding,) = json.loads(report.read_text())  # dropout does not disturb the comparison
    assert finding["code"] == "ACC013"
