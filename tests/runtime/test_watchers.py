"""Each watcher on small loops, in process: what it reports, the evidence table it shows, and
the correct forms it leaves alone."""

import json
import textwrap

import pytest

import watcher_loops as loops
from accumlint.runtime.runner import RunConfig, run


def _run(tmp_path, capsys, source, name="train.py", **options):
    script = tmp_path / name
    script.write_text(textwrap.dedent(source))
    report = tmp_path / "report.json"
    status = run(RunConfig(str(script), [], report_path=str(report), **options))
    out = capsys.readouterr().out
    return status, json.loads(report.read_text()), out


def _codes(findings):
    return sorted(f["code"] for f in findings)


def _table(finding):
    return finding["evidence"]["table"]


# ----- graph tracking ---------------------------------------------------------------------
def test_decoder_carrying_h_with_retain_graph_gives_acc003_and_acc006(tmp_path, capsys):
    status, findings, out = _run(tmp_path, capsys, loops.DECODER_RETAIN)
    assert status == 1
    assert _codes(findings) == ["ACC003", "ACC006"]
    acc003 = next(f for f in findings if f["code"] == "ACC003")
    assert acc003["evidence"]["carried"] == "h"
    assert acc003["evidence"]["graph_depth"] == 6  # T tokens: the last backward chains 6 graphs
    assert "`h` carries the autograd graph" in acc003["message"]
    depths = [row[1] for row in _table(acc003)["rows"]]
    assert depths == sorted(depths) and depths[0] == 1 and len(depths) >= 3
    held = [row[3] for row in _table(acc003)["rows"]]
    assert held == sorted(held) and held[-1] > held[0]  # retained memory grows token to token
    assert "graphs chained" in out  # the table is in the text report too


def test_summed_decoder_is_clean(tmp_path, capsys):
    assert "total.backward()" in loops.DECODER_SUMMED
    status, findings, _ = _run(tmp_path, capsys, loops.DECODER_SUMMED)
    assert (status, findings) == (0, [])


def test_needless_retain_in_a_gan_is_acc006_despite_shared_accumulate_grad(tmp_path, capsys):
    status, findings, _ = _run(tmp_path, capsys, loops.GAN_RETAIN)
    assert _codes(findings) == ["ACC006"]
    (finding,) = findings
    assert finding["location"]["row"] == 20  # the d_loss.backward(retain_graph=True) line
    assert finding["evidence"]["graphs_never_used"] >= 2
    assert all(row[1] > 0 for row in _table(finding)["rows"])  # bytes held, step after step


def test_retain_graph_needed_by_three_heads_is_clean(tmp_path, capsys):
    status, findings, _ = _run(tmp_path, capsys, loops.THREE_HEADS)
    assert (status, findings) == (0, [])


# ----- window accounting ------------------------------------------------------------------
def test_undivided_loss_table_shows_each_micro_batch_weight(tmp_path, capsys):
    _, findings, out = _run(tmp_path, capsys, loops.UNDIVIDED)
    (finding,) = findings
    assert finding["code"] == "ACC001"
    table = _table(finding)
    assert table["columns"] == ["optimizer step", "weight of each micro-batch loss", "sum"]
    assert table["rows"][0] == [1, [1.0, 1.0, 1.0, 1.0], 4.0]
    assert "weight of each micro-batch loss" in out


def test_zeroing_inside_the_window_table(tmp_path, capsys):
    _, findings, _ = _run(tmp_path, capsys, loops.ZERO_EVERY_MICRO_STEP)
    (finding,) = findings
    assert finding["code"] == "ACC007"
    assert _table(finding)["rows"][:2] == [[0, 1], [0, 1]]  # one pass dropped each micro-step


def test_read_ahead_loader_flushing_each_epoch_is_clean(tmp_path, capsys):
    status, findings, _ = _run(tmp_path, capsys, loops.READ_AHEAD_LOADER)
    assert (status, findings) == (0, [])


def test_epochs_shorter_than_a_window_are_not_a_wrong_divisor(tmp_path, capsys):
    assert "torch.randn(24, 4)" in loops.SHORT_EPOCHS
    status, findings, _ = _run(tmp_path, capsys, loops.SHORT_EPOCHS)
    assert (status, findings) == (0, [])


def test_read_ahead_loader_leaking_the_partial_window_is_acc005(tmp_path, capsys):
    assert "if (i + 1) % 4 == 0:" in loops.READ_AHEAD_LEAKING
    _, findings, _ = _run(tmp_path, capsys, loops.READ_AHEAD_LEAKING)
    assert {f["code"] for f in findings} == {"ACC005"}
    stale = [f for f in findings if f["evidence"].get("window_size") == 6]
    assert stale, findings  # 2 leftover passes applied with the next epoch's 4


# ----- schedule ---------------------------------------------------------------------------
def test_scheduler_every_micro_step_table(tmp_path, capsys):
    _, findings, _ = _run(tmp_path, capsys, loops.SCHEDULER_EVERY_MICRO_STEP)
    (finding,) = findings
    assert finding["code"] == "ACC008"
    assert [row[1] for row in _table(finding)["rows"]][1:3] == [4, 4]


def test_scheduler_stepped_twice_by_one_wrapper_call_is_clean(tmp_path, capsys):
    status, findings, _ = _run(tmp_path, capsys, loops.SCHEDULER_WRAPPED, name="wrapped.py")
    assert (status, findings) == (0, [])


# ----- the report's shape ---------------------------------------------------------------
def test_json_objects_have_the_static_shape_plus_evidence(tmp_path, capsys):
    from accumlint.model import Finding, Location
    from accumlint.reporting.json_format import as_dict

    _, findings, _ = _run(tmp_path, capsys, loops.UNDIVIDED)
    static = as_dict(Finding("ACC001", "m", "f.py", Location(1, 1), Location(1, 1)))
    assert set(findings[0]) == set(static) | {"evidence"}
    assert findings[0]["url"].endswith("ACC001.md")


@pytest.mark.parametrize("kind", sorted(__import__("accumlint.runtime.messages",
                                                   fromlist=["MESSAGES"]).MESSAGES))
def test_every_message_kind_has_a_registered_code(kind):
    from accumlint.registry import RULES
    from accumlint.runtime.messages import MESSAGES

    assert MESSAGES[kind].code in RULES
