"""Calls on instances of the project's own classes are followed: `tools.clear()` with
`tools = GradTools(model)`, `self.tools.clear()` with `self.tools = GradTools(model)` in any method,
a parameter annotated `tools: GradTools`, the class in this module or imported from another.
A receiver that may hold something else (two classes, a library object, an unannotated parameter)
is not followed."""

from __future__ import annotations

import textwrap

import pytest

from tests.snippets import findings_of

TOOLS = """
class GradTools:
    def __init__(self, model):
        self.model = model

    def clear(self):
        self.model.zero_grad()

    def noop(self):
        return None
"""

SCRIPT = TOOLS + """

def train(model, opt, loader, k):
    tools = GradTools(model)
    for i, batch in enumerate(loader):
        {early}
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            {late}
"""

TRAINER = TOOLS + """

class Trainer:
    def __init__(self, model, opt, k):
        self.model, self.opt, self.k = model, opt, k
        self.tools = GradTools(model)

    def train_epoch(self, loader):
        for i, batch in enumerate(loader):
            {early}
            loss = self.model(batch).mean() / self.k
            loss.backward()
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.opt.step()
                {late}
"""

ANNOTATED = TOOLS + """

def train(model, opt, loader, k, tools: GradTools):
    for i, batch in enumerate(loader):
        {early}
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            {late}
"""


def _codes(source: str, path: str = "t.py") -> list[tuple[str, int]]:
    return sorted((f.code, f.location.row) for f in findings_of(textwrap.dedent(source).lstrip(), path=path))


def _row(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.lstrip().splitlines(), 1) if text in line)


@pytest.mark.parametrize("template, receiver", [(SCRIPT, "tools"), (TRAINER, "self.tools"), (ANNOTATED, "tools")])
def test_zeroing_in_a_method_of_a_project_object_called_every_micro_step(template, receiver):
    source = template.format(early=f"{receiver}.clear()", late="pass")
    assert _codes(source) == [("ACC007", _row(source, f"{receiver}.clear()"))]


@pytest.mark.parametrize("template, receiver", [(SCRIPT, "tools"), (TRAINER, "self.tools"), (ANNOTATED, "tools")])
def test_the_same_method_called_in_the_step_block_is_clean(template, receiver):
    assert _codes(template.format(early=f"{receiver}.noop()", late=f"{receiver}.clear()")) == []


def test_a_receiver_that_may_hold_two_classes_is_not_followed():
    source = TOOLS + """

class Other:
    def clear(self):
        return None


def train(model, opt, loader, k, fast):
    tools = GradTools(model)
    if fast:
        tools = Other()
    for i, batch in enumerate(loader):
        tools.clear()
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
"""
    assert "ACC007" not in {code for code, _ in _codes(source)}


def test_an_unannotated_parameter_is_not_followed():
    source = TOOLS + """

def train(model, opt, loader, k, tools):
    for i, batch in enumerate(loader):
        tools.clear()
        loss = model(batch).mean() / k
        loss.backward()
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
"""
    assert "ACC007" not in {code for code, _ in _codes(source)}


def test_a_project_class_in_another_module(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "tools.py").write_text(textwrap.dedent(TOOLS).lstrip())
    body = TRAINER[len(TOOLS):]
    for early, late, expected in [("self.tools.clear()", "pass", True), ("self.tools.noop()", "self.tools.clear()", False)]:
        source = "from pkg.tools import GradTools\n" + body.format(early=early, late=late)
        (tmp_path / "train.py").write_text(source)
        monkeypatch.chdir(tmp_path)
        found = _codes((tmp_path / "train.py").read_text(), "train.py")
        assert found == ([("ACC007", _row(source, "self.tools.clear()"))] if expected else [])


def test_a_class_the_frameworks_layer_knows_keeps_its_framework_facts_when_defined_in_the_project():
    # Checking Accelerate's own repository, `Accelerator` is a class of the project: its backward
    # still divides by the accumulation steps (framework knowledge), whatever its code looks like.
    source = """
class Accelerator:
    def __init__(self, gradient_accumulation_steps=1):
        self.gradient_accumulation_steps = gradient_accumulation_steps

    def backward(self, loss):
        loss.backward()


def train(model, opt, loader, k):
    accelerator = Accelerator(gradient_accumulation_steps=k)
    for i, batch in enumerate(loader):
        loss = model(batch).mean() / k
        accelerator.backward(loss)
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""
    assert ("ACC010", _row(source, "accelerator.backward(loss)")) in _codes(source)
