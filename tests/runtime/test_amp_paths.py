"""GradScaler misuse that torch itself raises on, or that is silent: the findings and hints."""

import json
import textwrap

from accumlint.runtime.runner import RunConfig, run

LOOP = """
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
accum_steps = 2
for i in range(8):
    with torch.autocast("cpu", dtype=torch.float16):
        loss = model(torch.randn(8, 4)).pow(2).mean() / accum_steps
    scaler.scale(loss).backward()
{body}
"""


def _run(tmp_path, capsys, body):
    script = tmp_path / "amp.py"
    script.write_text(LOOP.format(body=textwrap.indent(textwrap.dedent(body), "    ")))
    report = tmp_path / "r.json"
    status = run(RunConfig(str(script), [], report_path=str(report)))
    captured = capsys.readouterr()
    return status, json.loads(report.read_text()), captured.err


def test_unscale_every_micro_step_gets_a_hint(tmp_path, capsys):
    status, findings, err = _run(tmp_path, capsys, """
        scaler.unscale_(optimizer)
        if (i + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    """)
    assert status == 1
    assert {f["code"] for f in findings} == {"ACC004"}
    assert any("every micro-step" in f["message"] for f in findings)
    assert "unscale_() has already been called" in err and "accumlint: ACC004" in err


def test_backward_after_unscale_is_flagged(tmp_path, capsys):
    status, findings, _ = _run(tmp_path, capsys, """
        if i % accum_steps == 0:
            scaler.unscale_(optimizer)
        if (i + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    """)
    assert [f["code"] for f in findings] == ["ACC004"]
    assert "after scaler.unscale_()" in findings[0]["message"]


def test_update_every_micro_step_is_acc008(tmp_path, capsys):
    status, findings, err = _run(tmp_path, capsys, """
        if (i + 1) % accum_steps == 0:
            scaler.step(optimizer)
            optimizer.zero_grad()
        scaler.update()
    """)
    assert "ACC008" in {f["code"] for f in findings}
    assert "accumlint: ACC008" in err


def test_correct_amp_order_is_clean(tmp_path, capsys):
    status, findings, _ = _run(tmp_path, capsys, """
        if (i + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    """)
    assert (status, findings) == (0, [])


def test_checker_restores_torch_after_the_run(tmp_path, capsys):
    import torch
    before = (torch.autograd.backward, torch.optim.Optimizer.zero_grad,
              torch.amp.GradScaler.step, torch.nn.utils.clip_grad_norm_)
    _run(tmp_path, capsys, "pass")
    after = (torch.autograd.backward, torch.optim.Optimizer.zero_grad,
             torch.amp.GradScaler.step, torch.nn.utils.clip_grad_norm_)
    assert before == after
