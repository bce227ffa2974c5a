"""ACC004's fix inserts one `scaler.unscale_(opt)` per optimizer, before its first clip, inside the
step block: a second `unscale_` on one optimizer in one step raises (issue 13)."""

from __future__ import annotations

import textwrap

from accumlint.engine import check_source, fix_source

TWO_CLIPS = textwrap.dedent("""
    import torch

    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(encoder(x), decoder(x), y) / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            torch.nn.utils.clip_grad_norm_(encoder.parameters(), 1.0)
            torch.nn.utils.clip_grad_norm_(decoder.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""")


def test_two_clips_on_one_optimizer_get_one_unscale():
    found = [(f.code, f.location.row) for f in check_source(TWO_CLIPS, "case.py").findings]
    assert found == [("ACC004", 10), ("ACC004", 11)]
    result = fix_source(TWO_CLIPS, "case.py")
    assert result.error is None, result.error
    fixed = result.fixed_source
    assert fixed is not None
    compile(fixed, "fixed.py", "exec")
    assert fixed.count("scaler.unscale_(optimizer)") == 1
    assert fixed.index("scaler.unscale_(optimizer)") < fixed.index("clip_grad_norm_(encoder")
    assert [f.code for f in check_source(fixed, "case.py").findings] == []
    assert fix_source(fixed, "case.py").fixed_source in (None, fixed)


def test_unscale_after_the_clips_is_moved_not_doubled():
    source = TWO_CLIPS.replace(
        "        scaler.step(optimizer)\n", "        scaler.unscale_(optimizer)\n        scaler.step(optimizer)\n"
    )
    assert source != TWO_CLIPS
    fixed = fix_source(source, "case.py").fixed_source
    assert fixed is not None
    assert fixed.count("scaler.unscale_(optimizer)") == 1
    assert fixed.index("scaler.unscale_(optimizer)") < fixed.index("clip_grad_norm_(encoder")


def test_unscale_of_another_optimizer_is_left_alone():
    source = TWO_CLIPS.replace(
        "        scaler.step(optimizer)\n",
        "        scaler.unscale_(other_optimizer)\n        scaler.step(optimizer)\n        scaler.step(other_optimizer)\n",
    )
    assert source != TWO_CLIPS
    fixed = fix_source(source, "case.py").fixed_source
    assert fixed is not None
    assert fixed.count("scaler.unscale_(other_optimizer)") == 1
    assert fixed.count("scaler.unscale_(optimizer)") == 1
