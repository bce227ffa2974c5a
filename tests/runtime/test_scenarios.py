"""Every buggy scenario is flagged with its code; every fixed one and every control is clean.

The scripts run unmodified through the runner behind `accumlint run`, several per interpreter
(tests/runtime/batch_run.py, in the session fixture of conftest.py) so the matrix pays torch's
import once per core; the CLI itself is exercised by real subprocess runs in test_cli.py."""

import os
from types import SimpleNamespace

import pytest

from runtime_checks import CONTROLS, SCENARIOS, control_path


@pytest.fixture(scope="module")
def results(scenario_runs):
    runs = scenario_runs[0]
    return {script: (SimpleNamespace(returncode=r["status"], stdout=r["stdout"], stderr=""), r["findings"])
            for script, r in runs.items()}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_buggy_is_flagged_with_its_code(results, scenario):
    proc, findings = results[scenario.path("buggy")]
    assert findings is not None, proc.stderr[-2000:]
    assert scenario.code in {f["code"] for f in findings}, proc.stdout[-2000:]
    assert proc.returncode == 1
    mine = [f for f in findings if f["code"] == scenario.code]
    assert all(f["filename"].endswith(os.path.join(scenario.name, "buggy.py")) for f in mine)
    assert all(f["location"]["row"] > 1 and f["evidence"] for f in mine)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_fixed_is_clean(results, scenario):
    proc, findings = results[scenario.path("fixed")]
    assert findings == [], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0


@pytest.mark.parametrize("name", CONTROLS)
def test_control_is_clean(results, name):
    proc, findings = results[control_path(name)]
    assert findings == [], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0


def test_seed001_fixed_matches_one_batch_of_40(results):
    from runtime_checks import SCENARIOS as all_
    seed = next(s for s in all_ if s.name == "seed001_linreg")
    fixed_out = results[seed.path("fixed")][0].stdout
    buggy_out = results[seed.path("buggy")][0].stdout
    gap = lambda out: float(out.split("w_batch40| =")[1].split()[0])  # noqa: E731
    assert gap(fixed_out) < 1e-5 < 1e-2 < gap(buggy_out)


def test_expected_evidence_numbers(results):
    by_name = {s.name: s for s in SCENARIOS}

    def finding(name, code):
        _, findings = results[by_name[name].path("buggy")]
        return next(f for f in findings if f["code"] == code)

    assert set(finding("seed001_linreg", "ACC001")["evidence"]["weight_sum_per_step"]) == {4.0}
    assert set(finding("acc010_double_divided", "ACC010")["evidence"]["weight_sum_per_step"]) == {0.25}
    assert finding("acc002_loss_kept", "ACC002")["evidence"]["variable"] == "running_loss"
    assert finding("seed000_rnn_amp_tbptt", "ACC003")["evidence"]["carried"] == "decoder_hidden"
    assert finding("acc003_tbptt_retain", "ACC003")["evidence"]["carried"] == "hidden"
    stale = [f for f in results[by_name["acc005_partial_window"].path("buggy")][1]
             if f["code"] == "ACC005"]
    assert {"window_size": 7, "usual_window_size": 4}.items() <= stale[0]["evidence"].items() or \
        any(f["evidence"].get("window_size") == 7 for f in stale)
