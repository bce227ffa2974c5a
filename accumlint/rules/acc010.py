"""ACC010 double-scaled-loss: the loss divided by k twice (by hand, or by hand and by the framework)."""

from __future__ import annotations

from typing import Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts, accumulators, settings
from accumlint.analysis.collect import FOR_LOOPS, Definition, Stmt
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.events import BACKWARD, lightning_manual
from accumlint.analysis.exprs import dotted, keyed_name, mentions, names_in
from accumlint.analysis.windows import k_aliases
from accumlint.frameworks import Framework, deepspeed
from accumlint.model import Fix, TextEdit, Violation
from accumlint.rules.edits import precedence, remove, replace, replace_receiver
from accumlint.rules.common import ambiguous_tensor
from accumlint.rules.meta import FixSafety

CODE = "ACC010"
NAME = "double-scaled-loss"
SUMMARY = "the loss is divided by the accumulation steps twice"
FIX: FixSafety = "unsafe"


def _accum_names(facts: ModuleFacts) -> set[str]:
    """Names that read as the accumulation steps (for frameworks whose k lives in a config file):
    `args.gradient_accumulation_steps`, `gas = ds_config["gradient_accumulation_steps"]`."""
    return facts.cached("acc010.accum_names", lambda: _find_accum_names(facts))


def _configured_k(module: ast.Module) -> set[str]:
    """What the code hands DeepSpeed as its accumulation steps: the value of a
    `"gradient_accumulation_steps"` key in a config dict it builds (`{"gradient_accumulation_steps":
    args.update_freq}`, `dict(gradient_accumulation_steps=gas)`), whatever the name is called."""
    found: set[str] = set()
    for node in ast.walk(module):
        pairs: list[tuple[object, ast.expr]] = []
        if isinstance(node, ast.Dict):
            pairs = [(key.value, value) for key, value in zip(node.keys, node.values) if isinstance(key, ast.Constant)]
        elif isinstance(node, ast.Call) and dotted(node.func) == "dict":
            pairs = [(kw.arg, kw.value) for kw in node.keywords]
        for key, value in pairs:
            name = dotted(value) if key == deepspeed.CONFIG_ACCUMULATION_KEY else None
            if name is not None:
                found.add(name)
    return found


def _find_accum_names(facts: ModuleFacts) -> set[str]:
    found = _configured_k(facts.collected.module) if deepspeed.CONFIG_ACCUMULATION_KEY in facts.source.text else set()
    for scope in facts.collected.scopes:
        for occurrence in scope.occurrences:
            last = occurrence.name.rsplit(".", 1)[-1].lower()
            if "accum" in last:
                found.add(occurrence.name)
        for name, definitions in scope.defs.items():
            for definition in definitions:
                if definition.kind == "assign" and isinstance(definition.value, ast.Subscript):
                    if "accum" in facts.source.segment(definition.value).lower():
                        found.add(name)
    for node in ast.walk(facts.collected.module) if "accum" in facts.source.text.lower() else ():
        # `loss / conf["gradient_accumulation_steps"]`: the config entry read in place
        keyed = keyed_name(node) if isinstance(node, ast.Subscript) else None
        if keyed is not None and "accum" in keyed.lower():
            found.add(keyed)
    return found


def _lightning_automatic(facts: ModuleFacts) -> Iterator[Violation]:
    """Lightning's automatic optimisation divides by accumulate_grad_batches itself."""
    if lightning_manual(facts.collected):
        return
    for scope in facts.collected.scopes:
        if not scope.is_lightning_training_step:
            continue
        k_names = _accum_names(facts)  # only asked for here: finding them walks the whole module
        for value, stmt in scope.returns:
            scaling = facts.flow.scaling(value, stmt, k_names)
            if not scaling.unknown and scaling.k_divisions >= 1:
                changes = _drop_division(facts, value, stmt, k_names, False)
                fix = Fix("Remove the hand division by the accumulation steps", "unsafe", changes) if changes else None
                yield Violation(
                    CODE,
                    "the loss is divided by the accumulation steps twice: by hand and again by "
                    "Lightning's automatic optimisation",
                    stmt.node,
                    fix,
                )


def _k_division(expr: Optional[ast.expr], k_names: set[str]) -> Optional[ast.BinOp]:
    """`x / k` (or `x // k`) with k among `k_names`."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Div, ast.FloorDiv)) and mentions(expr.right, k_names):
        return expr
    return None


def _drop_division(facts: ModuleFacts, tensor, stmt: Stmt, k_names, receiver: bool) -> Optional[tuple[TextEdit, ...]]:
    """Undo one hand division by k: at the call, `loss /= k`, or `loss = x / k`."""
    src = facts.source
    division = _k_division(tensor, k_names)
    if division is not None:
        left = division.left
        if receiver:
            return (replace_receiver(src, division, src.segment(left), precedence(src, left)),)
        return (replace(src, division, src.segment(left)),)
    name = dotted(tensor)
    if name is None:
        return None
    base, updates = reaching(name, stmt.scope, stmt.order, stmt)
    for update in reversed(updates):
        divides = update.kind == "aug" and update.op in {"DivideAssign", "FloorDivideAssign"}
        if divides and update.value is not None and mentions(update.value, k_names):
            removal = remove(src, update.stmt.node, update.stmt.block)
            return (removal,) if removal is not None else None
    division = _k_division(base.value, k_names) if base is not None and base.kind == "assign" else None
    if base is not None and division is not None:
        if dotted(division.left) == name:
            removal = remove(src, base.stmt.node, base.stmt.block)
            return (removal,) if removal is not None else None
        return (replace(src, division, src.segment(division.left)),)
    return None


def _division_kept_from(event) -> bool:
    """`if not self.engine: loss = loss / k` before `self.engine.backward(loss)`: the hand
    division is guarded by the framework object itself, so the two never meet."""
    name = dotted(event.tensor)
    if name is None or event.receiver is None:
        return False
    base, updates = reaching(name, event.stmt.scope, event.stmt.order, event.stmt)
    for definition in ([base] if base is not None else []) + updates:
        for node, _ in definition.stmt.path:
            if isinstance(node, ast.If) and event.receiver in names_in(node.test):
                return True
    return False


def _hand_divisions(event, facts: ModuleFacts, k_names: set[str]) -> list[Definition]:
    """The definitions on the way to the backward's tensor (through sums) that divide by k."""
    return [d for d in _through_sums(event.tensor, event.stmt, facts) if _divides_by_k(d, k_names)]


def _divisions_guarded(event, dividing: list[Definition]) -> bool:
    """`if k > 1 and not self.deepspeed: loss = loss / k`, then `total = loss + aux` and
    `self.deepspeed.backward(total)`: every hand division on the way sits under a test of the
    engine itself, so the two never meet."""
    if event.receiver is None:
        return False
    return bool(dividing) and all(
        any(isinstance(node, ast.If) and event.receiver in names_in(node.test) for node, _ in d.stmt.path)
        for d in dividing
    )


def _through_sums(expr: ast.expr, at: Stmt, facts: ModuleFacts, depth: int = 0) -> list[Definition]:
    """The definitions `expr` holds at `at`, followed through copies and into the terms of a sum
    (`total = loss + rl_loss`)."""
    found = list(facts.flow.definitions_reaching(expr, at))  # extended below: never the flow's own list
    if depth >= 3:
        return found
    for definition in list(found):
        value = definition.value if definition.kind == "assign" else None
        if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub)):
            for term in (value.left, value.right):
                if dotted(term) is not None:
                    found += _through_sums(term, definition.stmt, facts, depth + 1)
    return found


def _divides_by_k(definition, k_names: set[str]) -> bool:
    value = definition.value
    if value is None or not mentions(value, k_names):
        return False
    if definition.kind in {"aug", "inplace"}:
        return definition.op in {"DivideAssign", "FloorDivideAssign", "div", "div_", "divide", "true_divide"}
    return definition.kind == "assign" and any(isinstance(node, ast.BinOp) and _k_division(node, k_names) is not None for node in ast.walk(value))


def _chosen_apart(event, dividing: list[Definition], k_names: set[str]) -> bool:
    """`if not args.deepspeed: loss /= k` and later, maybe in a called function, `if args.deepspeed:
    model.backward(loss)`: one setting chooses between the hand division and the framework's
    backward, so the two never run together."""
    return bool(dividing) and all(settings.apart(event.stmt, d.stmt, frozenset(k_names)) for d in dividing)


def _framework_k(event, facts: ModuleFacts) -> Optional[set[str]]:
    if event.framework == Framework.ACCELERATE and event.receiver in facts.roles.ambiguous_gas:
        return None  # built with and without accumulation steps in this file: which one is not in sight
    if event.framework == Framework.ACCELERATE and facts.roles.accumulating_accelerator(event.receiver):
        gas = facts.roles.accelerator_gas[event.receiver]
        if gas is None or isinstance(gas, ast.Call):
            return _accum_names(facts)
        return k_aliases(gas, event.stmt.scope)
    if event.framework == Framework.DEEPSPEED:
        return _accum_names(facts) | _engine_window(event)
    if event.framework == Framework.FABRIC and event.receiver in facts.roles.deepspeed_fabric_gas:
        return k_aliases(facts.roles.deepspeed_fabric_gas[event.receiver], event.stmt.scope)
    steps = accumulators.optimizer_window(event, facts.analysed)
    if steps is not None:  # an optimizer that accumulates and averages by itself (Keras 3)
        return k_aliases(steps, event.stmt.scope) | _accum_names(facts)
    return None


def _engine_window(event) -> set[str]:
    """The window size k of a loop whose engine steps on every micro-step (`model.backward(loss);
    model.step()`, no gate around them) while the loop gates other work on `(i + 1) % k == 0`:
    the engine, not the loop, accumulates over k, so its backward divides by k too. (Had it been
    built with 1, it would step every micro-batch and a hand division by k would still be wrong.)"""
    loop = event.stmt.loop
    if loop is None or event.receiver is None:
        return set()
    inside = [s for s in event.stmt.scope.stmts if loop.contains(s)]
    found = {name for s in inside if s.is_statement for part in s.own_parts for name in _gate_divisors(part)}
    steps = [
        s for s in inside for part in s.own_parts for node in ast.walk(part)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"
        and dotted(node.func.value) == event.receiver
    ]
    if not steps:
        return set()
    gating = {name for s in steps for node, _ in s.path if isinstance(node, (ast.If, ast.While)) for name in names_in(node.test)}
    return found - gating


def _gate_divisors(node: ast.AST) -> set[str]:
    """k of each `... % k == 0` (or `!= 0`) comparison in the node."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], (ast.Eq, ast.NotEq)):
            left, right = sub.left, sub.comparators[0]
            for modulo, zero in ((left, right), (right, left)):
                if isinstance(modulo, ast.BinOp) and isinstance(modulo.op, ast.Mod) and isinstance(zero, ast.Constant) and zero.value == 0:
                    name = dotted(modulo.right)
                    if name is not None:
                        found.add(name)
    return found


def _who(event) -> str:
    if event.framework == Framework.ACCELERATE:
        return "Accelerate's backward"
    if event.framework == Framework.DEEPSPEED:
        return "the DeepSpeed engine's backward"
    if event.framework == Framework.FABRIC:
        return ("the backward of the DeepSpeed engine that Fabric's DeepSpeedStrategy runs (its config sets "
                "`gradient_accumulation_steps`), whenever that strategy is chosen; keep one: drop the key from "
                "the config, or divide by hand only when another strategy runs")
    return "the optimizer, built with `gradient_accumulation_steps`, which averages the window itself"


def _multiplied_back(event, k_names) -> bool:
    """`loss_item = loss.item() * k` after the division: the code undoes it for logging, and
    removing the division would log k times the loss."""
    name = dotted(event.tensor)
    if name is None:
        return False
    for stmt in event.stmt.scope.stmts:
        for node in ast.walk(stmt.node) if stmt.is_statement and not isinstance(stmt.node, FOR_LOOPS + (ast.If, ast.While)) else ():
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    if mentions(other, k_names) and name in names_in(side):
                        return True
    return False


def _violation(event, facts, k_names, why: str) -> Violation:
    receiver = event.call is not None and event.tensor is getattr(event.call.func, "value", None)
    # Under Fabric the DeepSpeed strategy may be one choice of several (`... if devices > 1 else
    # "auto"`): on the others the hand division is the only one, so no edit is right on both.
    withheld = _multiplied_back(event, k_names) or event.framework == Framework.FABRIC
    changes = None if withheld else _drop_division(facts, event.tensor, event.stmt, k_names, receiver)
    fix = Fix("Remove the hand division by the accumulation steps", "unsafe", changes) if changes else None
    node = event.call if event.call is not None else event.stmt.node  # a loss function's return
    return Violation(CODE, f"the loss is divided by the accumulation steps twice: {why}", node, fix)


def check(facts: ModuleFacts) -> Iterator[Violation]:
    yield from _lightning_automatic(facts)
    seen: set[int] = set()
    for sf in facts.scopes:
        for event in sf.events:
            if event.kind != BACKWARD or event.helper or event.tensor is None:
                continue
            k_names = _framework_k(event, facts)
            if not k_names or _division_kept_from(event):
                continue
            dividing = _hand_divisions(event, facts, k_names)
            if not _chosen_apart(event, dividing, k_names) and not _divisions_guarded(event, dividing):
                scaling = facts.flow.scaling(event.tensor, event.stmt, k_names)
                if not scaling.unknown and scaling.k_divisions >= 1:
                    seen.add(id(event.call))
                    yield _violation(event, facts, k_names, f"by hand and again by {_who(event)}")
        for window, event in sf.micro_step_backwards():
            if event.tensor is None or id(event.call) in seen or _framework_k(event, facts) or ambiguous_tensor(event):
                continue
            scaling = facts.flow.scaling(event.tensor, event.stmt, window.k_names)
            if not scaling.unknown and scaling.k_divisions >= 2:
                yield _violation(event, facts, window.k_names, "both divisions name the same window size")
