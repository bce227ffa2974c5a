"""The user's variables that hold autograd graphs: locals, one level into lists, tuples, dicts
and plain objects' attributes (how `self.tr_loss` is found), named as the user wrote them."""

from __future__ import annotations

import linecache
import re
import types
from typing import Any, Iterator

import torch

from accumlint.runtime.findings import Site, user_frames

_LIST_PEEK = 2  # a list is judged by its oldest and newest elements; it grows at the end
_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, torch.nn.Module, torch.optim.Optimizer)


def _graph_tensor(value: Any):
    if isinstance(value, torch.Tensor) and value.grad_fn is not None:
        return value
    return None


def _elements(name: str, value: Any) -> Iterator[tuple[str, Any, int]]:
    """(display name, tensor, container length) for tensors inside one container value."""
    if isinstance(value, (list, tuple)):
        n = len(value)
        picks = range(n) if n <= _LIST_PEEK else (0, n - 1)
        for i in picks:
            tensor = _graph_tensor(value[i])
            if tensor is not None:
                yield f"{name}[{i}]", tensor, n
    elif isinstance(value, dict):
        for key, item in list(value.items())[:16]:
            tensor = _graph_tensor(item)
            if tensor is not None:
                yield f"{name}[{key!r}]", tensor, 1


def graph_variables(start_frame=None) -> Iterator[tuple[Any, str, Any, int]]:
    """(frame, name, tensor, container length) for each graph-holding user variable."""
    for frame in user_frames(start_frame):
        for name, value in list(frame.f_locals.items()):
            if name.startswith("__"):
                continue
            tensor = _graph_tensor(value)
            if tensor is not None:
                yield frame, name, tensor, 1
                continue
            if isinstance(value, (list, tuple, dict)):
                for shown, tensor, n in _elements(name, value):
                    yield frame, shown, tensor, n
            elif hasattr(value, "__dict__") and not isinstance(value, _OPAQUE):
                for attr, item in list(vars(value).items())[:64]:
                    tensor = _graph_tensor(item)
                    if tensor is not None:
                        yield frame, f"{name}.{attr}", tensor, 1
                    elif isinstance(item, (list, tuple)):
                        for shown, tensor, n in _elements(f"{name}.{attr}", item):
                            yield frame, shown, tensor, n


def _write_pattern(display: str) -> re.Pattern:
    base = re.escape(display.split("[")[0])
    return re.compile(rf"(?<![\w.]){base}\s*(?:([-+*/]=)|=(?!=)|\.(append|extend|insert)\()")


def write_site(frame, display: str) -> Site:
    """Where the variable is written in its function: an accumulating write (`+=`, `.append`,
    `x = x + ...`) wins over a plain one. Falls back to the line the frame is executing."""
    code = frame.f_code
    filename = code.co_filename
    pattern = _write_pattern(display)
    base = display.split("[")[0]
    first = code.co_firstlineno
    last = max((line for _, _, line in code.co_lines() if line), default=first)
    best, best_rank = None, -1
    for row in range(first, last + 1):
        text = linecache.getline(filename, row)
        match = pattern.search(text)
        if not match:
            continue
        accumulating = bool(match.group(1) or match.group(2)) or (
            re.search(rf"=\s*{re.escape(base)}\s*[-+]", text) is not None)
        rank = 2 if accumulating else 1
        if rank >= best_rank:
            best, best_rank = row, rank
    return Site(filename, best if best is not None else (frame.f_lineno or 1))
