"""Facts several rules ask about the same way."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Optional

from accumlint.analysis import ModuleFacts
from accumlint.analysis.calls import AnalysedModule
from accumlint.analysis.collect import WITHS, Scope, Stmt
from accumlint.analysis.events import BACKWARD, ZERO, Event
from accumlint.analysis.windows import Window
from accumlint.analysis.exprs import dotted, is_constant, keyword, last_part, method_of, names_in
from accumlint.analysis.roles import Roles
from accumlint.frameworks import Framework, Role, accelerate
from accumlint.model import Fix, Origin, Violation

_GRAD_RESCALERS = {"multiply_grads", "scale_grads", "scale_gradients", "rescale_grads"}


def disabled_scaler(name: Optional[str], scope: Scope) -> bool:
    """`scaler = GradScaler(enabled=False)` in sight, and no other binding of the name: a scaler
    built switched off leaves losses and gradients as they are, so its scale never reaches them."""
    if name is None:
        return False
    definitions = [d for s in scope.binding_scopes(name) for d in s.definitions(name)]
    return bool(definitions) and all(
        d.kind == "assign" and isinstance(d.value, ast.Call) and is_constant(keyword(d.value, "enabled"), False)
        for d in definitions
    )


def framework_divides(event: Event, roles: Roles) -> bool:
    """The framework divides the loss by the window itself (Accelerate with accumulation set,
    DeepSpeed's engine)."""
    if event.framework == Framework.ACCELERATE:
        return roles.accumulating_accelerator(event.receiver)
    if event.framework == Framework.FABRIC:  # a DeepSpeed strategy configured to accumulate, always chosen
        return event.receiver in roles.deepspeed_fabric_always
    return event.framework == Framework.DEEPSPEED


def rescales_grads(scope: Scope) -> bool:
    """Gradients divided after the window (`p.grad /= k`, `multiply_grads`): the loss need not be."""
    for name, definitions in scope.defs.items():
        if name.endswith(".grad") or name.endswith(".grad.data"):
            if any(d.kind in {"aug", "inplace"} for d in definitions):
                return True
    for site in scope.calls:
        receiver, method = method_of(site.call)
        if _is_rescaler(method) or _bound_to_rescaler(dotted(site.call.func), scope):
            return True
        if method in {"div_", "mul_"} and receiver is not None:
            name = dotted(receiver) or ""
            if name.endswith(".grad") or name.endswith(".grad.data"):
                return True
    return False


def _is_rescaler(name: str | None) -> bool:
    # torchtune's in-place spelling ends in `_` (`training.scale_grads_`).
    return name is not None and name.rstrip("_") in _GRAD_RESCALERS


def _bound_to_rescaler(name: str | None, scope: Scope) -> bool:
    """`self._grad_scaler(params, 1 / n)` after `self._grad_scaler = training.scale_grads_`."""
    if name is None:
        return False
    for seen in scope.sight():
        for definition in seen.definitions(name):
            value = definition.value if definition.kind == "assign" else None
            if isinstance(value, ast.Call) and value.args and (dotted(value.func) or "").endswith("compile"):
                value = value.args[0]  # torch.compile(training.scale_grads_)
            target = dotted(value) if value is not None else None
            if target is not None and _is_rescaler(target.rsplit(".", 1)[-1]):
                return True
    return False


def under_accumulate(stmt: Stmt, facts: ModuleFacts) -> bool:
    """Inside `with accelerator.accumulate(model):`."""
    for node, _ in stmt.path:
        if isinstance(node, WITHS):
            for item in node.items:
                if isinstance(item.context_expr, ast.Call):
                    receiver, method = method_of(item.context_expr)
                    owner = facts.roles.role(dotted(receiver) if receiver else None)
                    if method == accelerate.ACCUMULATE_CONTEXT and owner == Role.ACCELERATOR:
                        return True
    return False


_JUMPS = (ast.Continue, ast.Break, ast.Return, ast.Raise)


def bail_out(stmt: Stmt) -> bool:
    """Inside an `if` branch that ends by leaving the micro-step (`if not isfinite(loss):
    zero_grad(); continue`): that micro-batch is thrown away on purpose, the window goes on."""
    for node, branch in stmt.path:
        if isinstance(node, ast.If):
            block = node.body if branch == "body" else node.orelse
            if block and isinstance(block[-1], _JUMPS):
                return True
    return False


def micro_step_zeroings(facts: ModuleFacts, events: list[Event], window: Window) -> list[Event]:
    """The zeroings that run on every micro-step of the window (ACC007): then only the last
    micro-batch's gradient reaches the step, whatever the loss is divided by."""
    return [
        e for e in events
        if e.kind == ZERO and window.every_micro_step(e.stmt)
        and not under_accumulate(e.stmt, facts) and not bail_out(e.stmt)
    ]


def ambiguous_tensor(event: Event) -> bool:
    """`model.backward(loss)` on an object of unknown kind: either a tensor's backward given a
    gradient, or an engine's backward of `loss`. Which value is differentiated is not known."""
    call = event.call
    if call is None or not call.args or not isinstance(call.func, ast.Attribute):
        return False
    return event.tensor is call.func.value


def place_in(module: AnalysedModule, node: ast.AST) -> str:
    """`engine.py:78`: where a node of another module of the project is, for a message."""
    name = module.path.name if module.path is not None else "another module"
    return f"{name}:{getattr(node, 'lineno', '?')}"


def checking_test_loop(scope: Scope, stmts: list[Stmt], path: Optional[Path] = None) -> bool:
    """A test function (`def test_...`, or any function of a test module: `test_x.py`'s
    `_check_mixed_precision`) whose loop checks something on every iteration (`assert
    out_1.allclose(out_2)`, `torch.testing.assert_close(...)`): an exercise of the code (twins
    trained in lockstep, a backward run per dtype), not a training run: what the loop costs or how
    its gradients add up changes nothing it checks. A training script's own `assert
    torch.isfinite(loss)` does not count: it is no test function."""
    if not in_a_test(scope, path):
        return False
    for stmt in stmts:
        if isinstance(stmt.node, ast.Assert):
            return True
        call = stmt.node.value if isinstance(stmt.node, ast.Expr) else None
        if isinstance(call, ast.Call) and (last_part(dotted(call.func)) or "").lower().startswith("assert"):
            return True
    return False


def in_a_test(scope: Scope, path: Optional[Path] = None) -> bool:
    """A test function (`def test_...`), or any function of a test module."""
    return scope.name.startswith("test") or (path is not None and _test_module(path))


def pytest_function(scope: Scope, path: Optional[Path] = None) -> bool:
    """`def test_...` (pytest's naming), or any function of a test module; not a tutorial's
    `def test(model, loader)` evaluation pass."""
    return scope.name.startswith("test_") or (path is not None and _test_module(path))


def _test_module(path: Path) -> bool:
    """`test_x.py` or `x_test.py` (a folder's name says nothing: a project may live under one)."""
    return path.name.startswith("test_") or path.stem.endswith("_test")


def zeroed_before_last_backward(sf) -> Iterator[tuple[Window, Event, ast.If]]:
    """`if (i + 1) % k == 0: opt.zero_grad()` before the forward, and the step under the same
    test after the backward: the zeroing runs once per window, but on its last micro-step, ahead of
    that micro-step's backward, so it throws away the k - 1 micro-batches already summed. (Zeroing
    on the first micro-step, `i % k == 0`, is the correct way to write it and reads differently.)"""
    for window in sf.windows:
        gate = window.gate
        if window.form != "gate" or gate is None or window.branch != "body":
            continue
        backwards = [e for e in sf.events if e.kind == BACKWARD and window.every_micro_step(e.stmt)]
        if not backwards:
            continue
        first_backward = min(e.order for e in backwards)
        for zero in sf.events:
            if zero.kind != ZERO or zero.helper or not window.micro_loop.contains(zero.stmt) or zero.order >= first_backward:
                continue
            if not zero.stmt.compatible(window.step.stmt):  # the other branch (AMP or plain) of the loop
                continue
            guards = [node for node, branch in zero.stmt.path if isinstance(node, ast.If) and branch == "body"]
            if guards and guards[-1] is not gate and ast.dump(guards[-1].test) == ast.dump(gate.test) \
                    and not _rebound_between(sf.scope, gate.test, zero.order, window.step.order):
                yield window, zero, gate


def _rebound_between(scope, test: ast.expr, start: int, end: int) -> bool:
    """A name of the test changes between the two gates (`i += 1`): they are not the same micro-step."""
    return any(start < d.order < end for name in names_in(test) for d in scope.definitions(name))


def located(code: str, facts: ModuleFacts, module: AnalysedModule, message: str, node: ast.AST, fix: Optional[Fix]) -> Optional[Violation]:
    """A finding at a statement of a called function: with its fix when the function is in the
    checked module, in another module at that module's file (where no fix is offered); None when
    that file cannot be named."""
    if module is facts.analysed:
        return Violation(code, message, node, fix)
    if module.path is not None and module.source is not None:
        return Violation(code, message, node, origin=Origin(str(module.path), module.source))
    return None
