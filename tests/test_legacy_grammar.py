"""Files written for Python 3.5/3.6, where `async` was still a name (`Pool.apply(f, async=True)`),
are checked as that grammar reads them instead of being reported as syntax errors, and their
fixes are kept when the fixed text parses the same way; a real syntax error is still one."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from accumlint import engine
from accumlint.legacy_grammar import LEGACY_GRAMMAR
from tests.snippets import findings_of

LOOP = textwrap.dedent("""
    import torch

    def train(model, loader, optimizer, accum, queue):
        queue.put(model.state_dict(), async=True)
        for i, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
""").lstrip()


def test_a_36_era_file_is_checked():
    result = engine.check_source(LOOP, "train.py")
    assert result.error is None
    assert {f.code for f in result.findings} == {"ACC001", "ACC005"}


def test_its_fixes_keep_it_parsing_as_written():
    result = engine.fix_source(LOOP, "train.py")
    assert result.error is None
    assert result.fixes_applied >= 1
    fixed = result.fixed_source
    assert isinstance(fixed, str) and "async=True" in fixed and fixed != LOOP
    ast.parse(fixed, feature_version=LEGACY_GRAMMAR)
    assert result.notices == []  # no fix withheld as failing its check


def test_a_real_syntax_error_is_still_reported():
    result = engine.check_source(LOOP.replace("async=True)", "async=True"), "train.py")
    assert result.error is not None and "syntax error" in result.error.message


def test_a_36_era_helper_module_is_read(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "steps.py").write_text(textwrap.dedent("""
        def step(optimizer, queue):
            queue.put(None, async=True)
            optimizer.step()
            optimizer.zero_grad()
    """).lstrip())
    script = textwrap.dedent("""
        from steps import step

        def train(model, loader, optimizer, queue, accum):
            for i, (x, y) in enumerate(loader):
                loss = model(x, y) / accum
                loss.backward()
                if (i + 1) % accum == 0:
                    step(optimizer, queue)
    """).lstrip()
    path = tmp_path / "train.py"
    path.write_text(script)
    found = findings_of(path.read_bytes(), path=str(path), select=("ACC005",))
    assert [f.code for f in found] == ["ACC005"]
    assert "step" in found[0].message
