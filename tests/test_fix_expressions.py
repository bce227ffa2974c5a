"""Every kind of expression a fix can land on: fixed, re-checked, fixed again. The fixed text must
compile, lose the finding, change nothing on a second run and leave every other line alone."""

from __future__ import annotations

import textwrap

import pytest

from accumlint import engine

ACC001_LOOP = """
import torch


def train(model, crit, opt, scaler, loader, k):
    for i, (x, y) in enumerate(loader):
        out = model(x)
        loss = crit(out, y)
        {backward}
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
"""

BACKWARDS = {
    "name": ("loss.backward()", "(loss / k).backward()"),
    "attribute chain": ("out.loss.backward()", "(out.loss / k).backward()"),
    "subscript": ("out['loss'].backward()", "(out['loss'] / k).backward()"),
    "call": ("crit(out, y).backward()", "(crit(out, y) / k).backward()"),
    "sum in parentheses": ("(loss + out.aux).backward()", "((loss + out.aux) / k).backward()"),
    "walrus": ("(extra := crit(out, y)).backward()", "((extra := crit(out, y)) / k).backward()"),
    "function form": ("torch.autograd.backward(loss)", "torch.autograd.backward(loss / k)"),
    "scaler": ("scaler.scale(loss).backward()", "scaler.scale(loss / k).backward()"),
    "conditional": ("(loss if i else out.aux).backward()", "((loss if i else out.aux) / k).backward()"),
}


def _round_trip(source: str, code: str, unsafe: bool = False) -> str:
    source = textwrap.dedent(source)
    assert code in {f.code for f in engine.check_source(source, "t.py").findings}
    result = engine.fix_source(source, "t.py", unsafe_fixes=unsafe)
    assert result.error is None, result.error
    fixed = result.fixed_source
    assert isinstance(fixed, str)
    compile(fixed, "t.py", "exec")
    assert code not in {f.code for f in engine.check_source(fixed, "t.py").findings}
    assert engine.fix_source(fixed, "t.py", unsafe_fixes=unsafe).fixed_source is None  # idempotent
    changed = [(a, b) for a, b in zip(source.splitlines(), fixed.splitlines()) if a != b]
    assert len(source.splitlines()) == len(fixed.splitlines()) and len(changed) == 1
    return changed[0][1].strip()


@pytest.mark.parametrize("kind", BACKWARDS)
def test_acc001_divides_any_backward_tensor(kind):
    backward, expected = BACKWARDS[kind]
    assert _round_trip(ACC001_LOOP.format(backward=backward), "ACC001") == expected


ACC002_LOOP = """
import torch


def train(model, crit, opt, loader, k, n):
    total, hist = torch.zeros(()), []
    for i, (x, y) in enumerate(loader):
        out = model(x)
        loss = crit(out, y) / k
        loss.backward()
        {store}
        if (i + 1) % k == 0 or i + 1 == len(loader):
            opt.step()
            opt.zero_grad()
    print(total, hist)
"""

STORES = {
    "name": ("total += loss", "total += loss.detach()"),
    "int literal operand": ("total += loss * 2", "total += (loss * 2).detach()"),
    "name operand": ("total += loss * n", "total += (loss * n).detach()"),
    "quotient in a call": ("hist.append(loss / 2)", "hist.append((loss / 2).detach())"),
    "unary": ("total += -loss", "total += (-loss).detach()"),
    "power": ("total += loss ** 2", "total += (loss ** 2).detach()"),
    "tensor method": ("total += loss.float()", "total += loss.float().detach()"),
    "walrus": ("hist.append(kept := loss * 2)", "hist.append((kept := loss * 2).detach())"),
    "conditional": ("total += loss if i else loss * 2", "total += (loss if i else loss * 2).detach()"),
}


@pytest.mark.parametrize("kind", STORES)
def test_acc002_detaches_the_whole_stored_value(kind):
    store, expected = STORES[kind]
    assert _round_trip(ACC002_LOOP.format(store=store), "ACC002", unsafe=True) == expected


@pytest.mark.parametrize("store", [
    "total += loss.item() / k",  # a Python float
    "hist.append(f'{loss.item():.3f}')",  # a string
    "hist.append([v.item() for v in (loss, loss * 2)])",  # numbers from a comprehension
    "hist.append(lambda: loss)",  # a function, not a tensor
    "total += len(hist)",  # an int
])
def test_acc002_leaves_values_that_are_no_tensor_with_a_graph(store):
    source = textwrap.dedent(ACC002_LOOP.format(store=store))
    assert "ACC002" not in {f.code for f in engine.check_source(source, "t.py").findings}
