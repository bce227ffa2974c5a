"""ACC001 unscaled-accumulated-loss: the loss reaches backward undivided by the window size."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from accumlint import frameworks
from accumlint.frameworks import ddp
from accumlint.analysis import ModuleFacts, accumulators
from accumlint.analysis.accumulators import Applied
from accumlint.analysis.calls import AnalysedModule
from accumlint.analysis.collect import Scope
from accumlint.analysis.dataflow import Scaling
from accumlint.analysis.events import Event
from accumlint.analysis.exprs import dotted, keyword, last_part, method_of, names_in
from accumlint.analysis.windows import Window
from accumlint.model import Fix, Violation
from accumlint.rules.common import (
    ambiguous_tensor, checking_test_loop, framework_divides, located, micro_step_zeroings, rescales_grads,
    zeroed_before_last_backward,
)
from accumlint.rules.edits import MUL, divided, operand, replace, replace_receiver
from accumlint.rules.meta import FixSafety
from accumlint.source import SourceText

CODE = "ACC001"
NAME = "unscaled-accumulated-loss"
SUMMARY = "loss handed to backward is never divided by the accumulation steps"
FIX: FixSafety = "safe"


_MISPLACED = "; `{}` reads as a logging frequency, not accumulation steps: the step block looks misplaced"


def _message(k_text: str, path: str = "", zeroed_each_micro_step: bool = False) -> str:
    where = f" ({path})" if path else ""
    if zeroed_each_micro_step:
        # Today only the last micro-batch reaches the step (ACC007); the size is wrong once that is fixed.
        return (
            f"loss reaches backward without division by the accumulation steps `{k_text}`: once the zeroing "
            f"that wipes the window (ACC007) moves to the window's start, the gradient of each step will be "
            f"`{k_text}` times too large{where}"
        )
    return (
        f"loss reaches backward without division by the accumulation steps `{k_text}`: "
        f"the gradient of each step is `{k_text}` times too large{where}"
    )


def _reportable(scaling: Scaling, window: Window) -> bool:
    """Shown unscaled on some path: never divided, not a sum over samples, and divided by nothing
    but (perhaps) a running count of this window's micro-steps."""
    if scaling.unknown or scaling.scaled:
        return False
    return scaling.counter is None or scaling.counter_loop is window.micro_loop.node


def _no_division_helps(src: SourceText, scaling: Scaling, k_text: str, path: str = "") -> Optional[str]:
    """The message when a plain division at the backward call would not make the code right
    (None: it would)."""
    where = f" ({path})" if path else ""
    if scaling.counter is not None:
        return (
            f"loss reaches backward divided by `{src.segment(scaling.counter)}`, a running count of micro-steps, "
            f"not by the accumulation steps `{k_text}`: the micro-batches enter each update with unequal, "
            f"shrinking weights instead of 1/`{k_text}` each{where}"
        )
    if scaling.partial:
        return (
            f"loss reaches backward without division by the accumulation steps `{k_text}` on one of the "
            f"branches that produce it (another scales it): whenever that branch runs its micro-batch enters "
            f"the update `{k_text}` times too strongly{where}"
        )
    return None


def _division_fix(src: SourceText, event: Event, k: ast.expr, k_text: str) -> Optional[Fix]:
    assert event.call is not None and event.tensor is not None
    new_tensor = divided(src, event.tensor, k)
    if isinstance(event.call.func, ast.Attribute) and event.tensor is event.call.func.value:
        edit = replace_receiver(src, event.tensor, new_tensor, MUL)
    else:
        edit = replace(src, event.tensor, new_tensor)
    return Fix(f"Divide the loss by `{k_text}` at the backward call", "safe", (edit,))


def _k_means_the_same_in(k_text: str, caller: Scope, helper: Scope) -> bool:
    """`self.k` names one object in two methods of a class; a caller's local `k` is not in the
    helper's sight, so no division by it can be written there."""
    return k_text.startswith("self.") and caller.class_node is not None and helper.class_node is not None


def _one_micro_batch_survives(facts: ModuleFacts, sf, window: Window) -> bool:
    """The gradients are zeroed on every micro-step, or at the window's last one before its backward
    (ACC007): only one micro-batch reaches each step, whatever the loss is divided by."""
    return bool(micro_step_zeroings(facts, sf.events, window)) or any(
        found is window for found, _, _ in zeroed_before_last_backward(sf)
    )


def _left_to_others(event: Event, module: AnalysedModule) -> bool:
    """A backward in another function that this rule does not judge: its tensor is not in sight,
    its framework divides by k itself, or it hands the gradients back or overwrites them."""
    return (
        rescales_grads(event.stmt.scope) or framework_divides(event, module.roles) or ambiguous_tensor(event)
        or event.framework in frameworks.GRAPH_FREE_FRAMEWORKS | frameworks.OVERWRITING_FRAMEWORKS
    )


def _located(facts: ModuleFacts, module: AnalysedModule, message: str, event: Event, fix: Optional[Fix]) -> Optional[Violation]:
    """The finding at a backward in a called function (see `common.located`)."""
    assert event.call is not None
    return located(CODE, facts, module, message, event.call, fix)


def _in_helpers(facts: ModuleFacts, sf) -> Iterator[Violation]:
    for window, found in sf.helper_backwards():
        event, module = found.event, found.module
        zeroed = _one_micro_batch_survives(facts, sf, window)
        if _left_to_others(event, module):
            continue
        assert event.tensor is not None and event.call is not None
        scaling = module.flow.scaling(event.tensor, event.stmt, window.k_names)
        # A step function that runs its backward before its own gate (the call is the window's
        # step block) is read only as all its callers hand it the loss: another caller may divide.
        through_step = not window.every_micro_step(found.calls[0].stmt)
        if scaling.unknown and len(found.calls) == 1 and found.calls[0].call is not None and not through_step:
            # `backward_step(loss, ...)` runs `loss.backward()`: the loss is the one handed in here
            into = found.calls[0]
            scaling = module.flow.handed_scaling(event.tensor, event.stmt, window.k_names, into.call, into.stmt, facts.flow)
        if not _reportable(scaling, window):
            continue
        k_text = facts.source.segment(window.k)
        special = _no_division_helps(module.source or facts.source, scaling, k_text, found.path())
        message = special or _message(k_text, found.path(), zeroed)
        fix = None
        if module is facts.analysed and _k_means_the_same_in(k_text, sf.scope, event.stmt.scope) and not (
            window.reporting_gate or zeroed or special
        ):
            fix = _division_fix(facts.source, event, window.k, k_text)
        violation = _located(facts, module, message, event, fix)
        if violation is not None:
            yield violation


def _in_called_windows(facts: ModuleFacts, sf) -> Iterator[Violation]:
    """A loop that steps after calling a function which runs k micro-batches' backward passes:
    each pass's loss must be divided by k there, in the callee's own terms."""
    for window in sf.called_windows():
        loop = window.step.stmt.loop
        body = [s for s in sf.scope.stmts if loop is None or loop.contains(s)]
        if rescales_grads(sf.scope) or checking_test_loop(sf.scope, body, facts.analysed.path):
            continue  # the caller rescales the gradients, or a test runs the window and checks what it did
        module = window.callee.module
        for event in window.backwards:
            if event.call is None or event.tensor is None or _left_to_others(event, module):
                continue
            scaling = module.flow.scaling(event.tensor, event.stmt, set(window.k_names))
            if scaling.unknown or scaling.scaled or scaling.counter is not None:
                continue
            k_text = (module.source or facts.source).segment(window.k)
            fix = _division_fix(facts.source, event, window.k, k_text) if module is facts.analysed else None
            violation = _located(facts, module, _message(k_text, window.path()), event, fix)
            if violation is not None:
                yield violation


def _accumulated_fix(facts: ModuleFacts, applied: Applied, k: ast.expr) -> Optional[Fix]:
    """`zip(acc, vars)` -> `zip([g / tf.cast(k, g.dtype) for g in acc], vars)` (or the division
    added to the element of a list built from the accumulators), where `tf` and k are in sight."""
    src = facts.source
    tf = next((alias for alias, origin in facts.collected.imports.items() if origin == "tensorflow"), None)
    scope = applied.stmt.scope
    if tf is None or not _readable(k, scope, facts):
        return None
    k_text = src.segment(k)
    values = applied.values
    if dotted(values) is not None:
        taken = names_in(values) | set(scope.defs) | set(scope.params)
        element = next((n for n in ("g", "grad", "acc_grad") if n not in taken), None)
        if element is None:
            return None
        text = f"[{element} / {tf}.cast({k_text}, {element}.dtype) for {element} in {src.segment(values)}]"
        edit = replace(src, values, text)
    elif isinstance(values, ast.ListComp) and len(values.generators) == 1 and isinstance(values.generators[0].target, ast.Name):
        element = values.generators[0].target.id
        edit = replace(src, values.elt, f"{operand(src, values.elt, MUL)} / {tf}.cast({k_text}, {element}.dtype)")
    else:
        return None
    return Fix(f"Divide the accumulated gradients by `{k_text}` where they are applied", "safe", (edit,))


def _readable(k: ast.expr, scope: Scope, facts: ModuleFacts) -> bool:
    """Every name in k can be read where the fix writes it."""
    module = facts.collected.scopes[0]
    for name in names_in(k):
        root = name.split(".", 1)[0]
        if root == "self":
            if scope.class_node is None or "self" not in scope.params:
                return False
        elif not (scope.definitions(root) or root in scope.params or module.definitions(root) or root in facts.collected.imports):
            return False
    return True


def _accumulated(facts: ModuleFacts) -> Iterator[Violation]:
    """Gradients added up by hand in accumulator variables and applied as their sum."""
    for accumulator in accumulators.of_module(facts):
        for applied in accumulator.applied:
            if not accumulators.applied_as_sum(accumulator, applied, facts):
                continue
            k = accumulators.window_size(accumulator, applied)
            k_text = f"`{facts.source.segment(k)}`" if k is not None else "k"
            yield Violation(
                CODE,
                f"the gradients accumulated in `{accumulator.name}` are applied as their sum over the window, "
                f"never divided by the accumulation steps {k_text}: the gradient of each step is {k_text} times too large",
                applied.call,
                _accumulated_fix(facts, applied, k) if k is not None else None,
            )


def _checked_by_a_test(scope, window, path) -> bool:
    """A test function whose accumulating loop asserts something each iteration (dtypes, that the
    parameters moved): it exercises the code, and the size of the update is not what it checks."""
    loop = window.step_loop
    return checking_test_loop(scope, [s for s in scope.stmts if loop.contains(s)], path)


def _loss_as_its_own_gradient(event: Event) -> Optional[ast.BinOp]:
    """`loss.backward(loss / k)`: the divided loss handed as backward's `gradient` argument, which
    multiplies the gradients by it instead of dividing the loss."""
    call = event.call
    if call is None or not isinstance(call.func, ast.Attribute) or call.func.attr != "backward":
        return None
    gradient = call.args[0] if call.args else keyword(call, "gradient")
    receiver = dotted(call.func.value)
    if not isinstance(gradient, ast.BinOp) or not isinstance(gradient.op, ast.Div) or receiver is None:
        return None
    return gradient if dotted(gradient.left) == receiver else None


def _weighted_by_its_loss(src: SourceText, event: Event, gradient: ast.BinOp) -> Violation:
    assert event.call is not None and isinstance(event.call.func, ast.Attribute)
    divisor = src.segment(gradient.right)
    divided_loss = src.segment(gradient)
    fix = None
    if len(event.call.args) == 1 and not event.call.keywords:
        fix = Fix(f"Differentiate `{divided_loss}`", "safe", (replace(src, event.call, f"({divided_loss}).backward()"),))
    return Violation(
        CODE,
        f"`{src.segment(event.call)}` hands the divided loss to backward as its `gradient`: each micro-batch's "
        f"gradients are multiplied by its own loss over `{divisor}` instead of divided by `{divisor}`; "
        f"differentiate the divided loss, `({divided_loss}).backward()`",
        event.call,
        fix,
    )


def _own_comm_hook(facts: ModuleFacts) -> bool:
    """`model.register_comm_hook(state, scale_by_k(allreduce_hook))`: a DDP hook of the project's
    own runs on the gradients as they are reduced and may divide them by the accumulation steps,
    out of sight of the loop. torch's built-in hooks do not."""
    def find() -> bool:
        for sf in facts.scopes:
            for site in sf.scope.calls:
                if method_of(site.call)[1] != ddp.REGISTER_COMM_HOOK:
                    continue
                hook = site.call.args[-1] if site.call.args else keyword(site.call, "hook")
                if hook is None or last_part(dotted(hook)) not in ddp.BUILTIN_COMM_HOOKS:
                    return True
        return False

    return facts.cached("acc001_own_comm_hook", find)


def check(facts: ModuleFacts) -> Iterator[Violation]:
    src = facts.source
    yield from _accumulated(facts)
    if any(sf.windows for sf in facts.scopes) and _own_comm_hook(facts):
        return
    for sf in facts.scopes:
        if not sf.windows or rescales_grads(sf.scope):
            continue
        for window, event in sf.micro_step_backwards():
            if event.call is None or event.tensor is None or framework_divides(event, facts.roles):
                continue
            weighted = _loss_as_its_own_gradient(event)
            if weighted is not None and not _checked_by_a_test(sf.scope, window, facts.analysed.path):
                yield _weighted_by_its_loss(src, event, weighted)
                continue
            if ambiguous_tensor(event) or _checked_by_a_test(sf.scope, window, facts.analysed.path):
                continue
            if event.framework in frameworks.GRAPH_FREE_FRAMEWORKS:
                continue  # the gradients are handed back, not added up: the accumulators decide
            if event.framework in frameworks.OVERWRITING_FRAMEWORKS:
                continue  # nothing adds up across backward calls: a division would shrink the one that counts
            scaling = facts.flow.scaling(event.tensor, event.stmt, window.k_names)
            if not _reportable(scaling, window):
                continue
            k_text = src.segment(window.k)
            special = _no_division_helps(src, scaling, k_text)
            if special is not None:  # a division at the backward call would not make it right
                yield Violation(CODE, special, event.call, None)
                continue
            if window.reporting_gate:  # a logging frequency gates the step: report, offer no division
                yield Violation(CODE, _message(k_text) + _MISPLACED.format(k_text), event.call, None)
                continue
            if _one_micro_batch_survives(facts, sf, window):
                # Dividing now would make today's one-micro-batch updates k times too small: no fix
                # until the zeroing (ACC007, fixed first) is in the step block.
                yield Violation(CODE, _message(k_text, zeroed_each_micro_step=True), event.call, None)
                continue
            yield Violation(CODE, _message(k_text), event.call, _division_fix(src, event, window.k, k_text))
        yield from _in_helpers(facts, sf)
    if any(sf.called_windows() for sf in facts.scopes) and _own_comm_hook(facts):
        return
    reported: set[int] = set()  # a function called from two loops is reported once
    for sf in facts.scopes:
        for violation in _in_called_windows(facts, sf):
            if id(violation.node) not in reported:
                reported.add(id(violation.node))
                yield violation
