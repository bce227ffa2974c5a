"""Whether an iterable has a `len()` the code shows: a name or attribute bound only to a
DataLoader, a list or a map-style dataset (or a progress bar over one). An `IterableDataset`, a
generator, `iter(...)`, a parameter or a value returned by an unknown call may have none."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from accumlint.analysis.collect import Collected, Definition, Scope
from accumlint.analysis.exprs import dotted, last_part, positional

_SIZED_CALLS = {"list", "tuple", "dict", "set", "sorted", "range"}
_LOADERS = {"DataLoader"}
_PROGRESS_BARS = {"tqdm", "track", "trange"}
_PREPARE = {"prepare", "prepare_data_loader"}


def _scopes(scope: Scope, collected: Collected, name: str) -> Iterator[Scope]:
    current: Optional[Scope] = scope
    while current is not None:
        yield current
        current = current.parent
    if name.startswith("self.") and scope.class_node is not None:
        for other in collected.scopes:
            if other.class_node is scope.class_node and other is not scope:
                yield other


def _definitions(name: str, scope: Scope, collected: Collected) -> list[Definition]:
    found: list[Definition] = []
    for sc in _scopes(scope, collected, name):
        found.extend(sc.definitions(name))
        if found and not name.startswith("self."):
            break
    return found


def _dataset_class(name: str, collected: Collected) -> Optional[bool]:
    """True for a map-style dataset class, False for an iterable-style one, None when unknown."""
    if "Iterable" in name:
        return False
    cls = collected.classes.get(last_part(name))
    if cls is not None:
        bases = [last_part(dotted(b)) for b in cls.bases]
        if any("Iterable" in b for b in bases):
            return False
        if any(isinstance(n, ast.FunctionDef) and n.name == "__len__" for n in cls.body):
            return True
        return True if any(b.endswith("Dataset") for b in bases) else None
    return True if name.endswith("Dataset") else None


class _Sizes:
    def __init__(self, collected: Collected):
        self.collected = collected

    def of(self, expr: Optional[ast.AST], scope: Scope, depth: int = 0) -> Optional[bool]:
        """True: sized; False: the code shows it has no len(); None: not in sight."""
        if expr is None or depth > 6:
            return None
        if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.Set)):
            return True
        if isinstance(expr, (ast.GeneratorExp, ast.Yield)):
            return False
        if isinstance(expr, ast.Call):
            func = dotted(expr.func) or ""
            last = last_part(func)
            if last in _PROGRESS_BARS:
                return self.of(positional(expr, 0), scope, depth + 1)
            if last in _SIZED_CALLS:
                return True
            if last in {"iter", "cycle", "repeat", "count", "islice", "map", "filter", "zip", "chain"}:
                return False
            if last in _LOADERS:
                dataset = positional(expr, 0)
                for kw in expr.keywords:
                    if kw.arg == "dataset":
                        dataset = kw.value
                return False if self.of(dataset, scope, depth + 1) is False else True
            if last and last[:1].isupper():
                return _dataset_class(last, self.collected)
            return None
        if isinstance(expr, ast.Subscript):  # `dataloaders["train"]`
            base = dotted(expr.value)
            return True if base is not None and self._free_loader(base, scope) else None
        name = dotted(expr)
        if name is None:
            return None
        if self._free_loader(name, scope):
            return True
        definitions = _definitions(name, scope, self.collected)
        bound = [d for d in definitions if d.kind != "param"]
        definitions = bound if bound else definitions
        if not definitions or any(d.kind == "param" for d in definitions):
            return None
        verdicts = [self._definition(d, depth) for d in definitions]
        if any(v is False for v in verdicts):
            return False
        return True if all(v is True for v in verdicts) else None

    def _free_loader(self, name: str, scope: Scope) -> bool:
        """A loader's name that nothing in the file binds, imports or receives as a parameter: a
        fragment of a script, read by its conventional name."""
        if "." in name or "loader" not in name.lower() or name.split(".")[0] in self.collected.imports:
            return False
        return not any(sc.definitions(name) for sc in _scopes(scope, self.collected, name))

    def _definition(self, definition: Definition, depth: int) -> Optional[bool]:
        value = definition.value
        scope = definition.stmt.scope
        if definition.kind == "assign":
            if isinstance(value, ast.Call) and last_part(dotted(value.func)) in _PREPARE:
                return self.of(positional(value, 0), scope, depth + 1)
            return self.of(value, scope, depth + 1)
        if definition.kind == "unpack" and isinstance(value, ast.Call) and definition.index:
            if last_part(dotted(value.func)) in _PREPARE:
                return self.of(positional(value, definition.index[0]), scope, depth + 1)
        return None


def has_len(expr: ast.expr, scope: Scope, collected: Collected) -> bool:
    """The code shows that `len(expr)` works."""
    return _Sizes(collected).of(expr, scope) is True
