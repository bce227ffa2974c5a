"""Entry methods: a function whose body is one iteration of a training loop out of sight.

A `fit_batch`, `_run_batch` or `train_step` that runs backward on every call and steps the
optimizer only under a `% k` (or counter) test is called once per micro-batch by whoever drives
it, in this module or another one: its body is a loop iteration whose loop is out of sight. So is
a `train_batch` that runs a whole window itself (`for j in range(k):` with the backward, then the
step), called once per update. Read from the syntax alone, before any event is known, so that the
collector can give such a body an implicit loop as it gives Lightning's `training_step` one.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional

_LOOPS_AND_SCOPES = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
STEP_METHODS = frozenset({"step", "optimizer_step", "apply_gradients"})
_RUNNER_GATES = frozenset({"every_n_iters", "every_n_train_iters", "every_n_inner_iters"})


def _outside_loops(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of these statements that no loop, function or class inside them encloses."""
    stack: list[ast.AST] = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if not isinstance(child, _LOOPS_AND_SCOPES):
                stack.append(child)


def _method_calls(nodes: Iterator[ast.AST], names: frozenset[str]) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names
        for node in nodes
    )


def may_step(node: ast.AST) -> bool:
    """`optimizer.step()`, or a method of the object or of what it holds named for stepping
    (`self.step_one()`, `self.optimizers.optimizer_scaler_step_all(scaler)`): whether it steps is
    left to the events, once the call is resolved."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr in STEP_METHODS:
        return True
    owner = node.func.value
    while isinstance(owner, ast.Attribute):
        owner = owner.value
    own = isinstance(owner, ast.Name) and owner.id == "self"
    return own and "step" in node.func.attr.lower().strip("_").split("_")


def steps_each_optimizer(loop: ast.AST) -> bool:
    """`for optimizer in self.optimizers: scaler.step(optimizer)`: a loop over optimizers, not
    over data, whose body steps the one its target names (as receiver or argument)."""
    if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name):
        return False
    target = loop.target.id
    for node in _outside_loops(loop.body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STEP_METHODS:
            receiver = node.func.value
            if (isinstance(receiver, ast.Name) and receiver.id == target) or any(
                isinstance(arg, ast.Name) and arg.id == target for arg in node.args
            ):
                return True
    return False


def _steps(statements: list[ast.stmt]) -> bool:
    """An optimizer step among these statements, outside loops or in a loop over optimizers."""
    nodes = list(_outside_loops(statements))
    return _method_calls(iter(nodes), STEP_METHODS) or any(steps_each_optimizer(node) for node in nodes)


def _window_test(test: ast.expr) -> bool:
    """A remainder (`step % k`, not string formatting) or a counter compared with a bound
    (`self.micro >= self.k`): what a window's gate is made of. The gate parser decides later."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RUNNER_GATES:
            return True  # an OpenMMLab hook's `self.every_n_iters(runner, n)`
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
                return True
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.GtE)) for op in node.ops):
            if isinstance(node.left, ast.Attribute) and not any(_not_a_count(c) for c in node.comparators):
                return True
    return False


def _not_a_count(value: ast.expr) -> bool:
    """`"pytorchDDP"`, `None`, `True`: a setting or a state compared, never a bound of a counter."""
    return isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, (str, bool)))


def _flag_tests(body: list[ast.stmt]) -> set[str]:
    """Names assigned a window test (`should_step = self.step % k == 0`) in the body."""
    return {
        target.id
        for node in _outside_loops(body)
        if isinstance(node, ast.Assign) and _window_test(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def gates_its_own_window(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Backward on every call, outside any loop of the function, and an optimizer step inside an
    `if` on a window test, also outside loops (a loop over the optimizers aside)."""
    body = function.body
    if not _method_calls(_outside_loops(body), _BACKWARD_METHODS):
        return False
    flags = _flag_tests(body)
    for node in _outside_loops(body):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if _window_test(test) or any(isinstance(n, ast.Name) and n.id in flags for n in ast.walk(test)):
            if _steps(node.body):
                return True
    return False


_MICRO_BATCH_SPLITS = frozenset({"chunk", "split", "tensor_split"})


def over_micro_batches(iterable: Optional[ast.expr]) -> bool:
    """`range(k)`, `batch.chunk(k)`, `torch.split(x, n)`, and `zip`/`enumerate` of those."""
    if not isinstance(iterable, ast.Call):
        return False
    func = iterable.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name in {"zip", "enumerate"}:
        walked = iterable.args[:1] if name == "enumerate" else iterable.args
        return bool(walked) and all(over_micro_batches(arg) for arg in walked)
    return name == "range" or name in _MICRO_BATCH_SPLITS


def _unlooped(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of these statements outside any loop, function or class; the loops themselves
    are yielded, not walked into."""
    stack: list[ast.AST] = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _LOOPS_AND_SCOPES):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def runs_whole_window(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A loop over micro-batches (`for j in range(k):`) that calls something on each of them, and
    after it an optimizer step, both outside any other loop of the function: one update per call.
    Whether the loop's calls run a backward is left to the events."""
    nodes = list(_unlooped(function.body))
    calls = [node for node in nodes if isinstance(node, ast.Call)]
    steps = [node.lineno for node in calls if isinstance(node.func, ast.Attribute) and node.func.attr in STEP_METHODS]
    named = [node.lineno for node in calls if may_step(node)]  # methods named for a step, resolved later
    if not named:
        return False

    def stepped_after(loop: ast.For | ast.AsyncFor) -> bool:
        end = loop.end_lineno or loop.lineno
        return end < min(steps) if steps else any(end < line for line in named)

    return any(
        isinstance(loop, (ast.For, ast.AsyncFor)) and over_micro_batches(loop.iter)
        and stepped_after(loop)
        and any(isinstance(inner, ast.Call) for statement in loop.body for inner in ast.walk(statement))
        for loop in nodes
    )
