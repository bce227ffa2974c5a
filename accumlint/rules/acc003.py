"""ACC003 recurrent-state-not-detached: a model output carried into the next iteration while
backward runs inside the loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts
from accumlint.analysis.ancestry import backward_ancestry
from accumlint.analysis.calls import AnalysedModule
from accumlint.analysis.collect import CallSite, Definition, Loop, Occurrence, Scope, Stmt
from accumlint.analysis.dataflow import read_outside_detach, reaching
from accumlint.analysis.events import BACKWARD, STEP, Event
from accumlint.analysis.exprs import dotted, is_constant, is_true, keyword, last_part
from accumlint.analysis.lifetimes import own_attribute
from accumlint.analysis.values import number_state
from accumlint.model import Fix, Origin, Violation
from accumlint.rules.edits import insert_after
from accumlint.rules.meta import FixSafety

CODE = "ACC003"
NAME = "recurrent-state-not-detached"
SUMMARY = "state carried into the next iteration is not detached after backward"
FIX: FixSafety = "sometimes"
_TENSOR_STATE = {"GRU", "RNN", "GRUCell", "RNNCell", "Linear"}
_TUPLE_STATE = {"LSTM", "LSTMCell"}
_FACTORIES = {"zeros", "ones", "randn", "rand", "empty", "full", "zeros_like", "randn_like", "tensor"}


def _feeds_backward(stmt: Stmt, scope: Scope, loop_graph: set[str], backward_stmts: set[int]) -> bool:
    """The statement is part of the forward pass that this loop's backward runs through."""
    if id(stmt) in backward_stmts:
        return True
    return any(d.stmt is stmt for name in loop_graph for d in scope.definitions(name))


@dataclass(frozen=True)
class _Span:
    """What repeats: the body of a loop, or a step method called again and again (its `self`
    attributes live from one call to the next)."""

    contains: Callable[[Stmt], bool]
    first_order: int
    method: Optional[str] = None  # the method's name when the span is a method body
    outer: Optional[Loop] = None  # the loop around this one
    node: Optional[ast.AST] = None  # the loop statement (None for a method body)


def _loop_span(loop: Loop) -> _Span:
    # A framework hook called once per batch (Lightning's training_step) is a method body too:
    # its locals and parameters (the batch) start anew on every call.
    return _Span(
        loop.contains, loop.first_order, loop.scope.name if loop.implicit else None, outer=loop.parent,
        node=None if loop.implicit else loop.node,
    )


def _whole_sequence(name: str, loop: _Span, scope: Scope, events) -> bool:
    """Full backpropagation through one sequence on purpose: every backward in the loop keeps its
    graph (`retain_graph=True`) for the next one, which reaches it through the state, and the
    state is made anew by the enclosing loop before this one starts (so the chain ends with it)."""
    if loop.outer is None:
        return False
    backwards = [e for e in events if e.kind == BACKWARD and loop.contains(e.stmt)]
    if not backwards or not all(e.call is not None and is_true(keyword(e.call, "retain_graph")) for e in backwards):
        return False
    if any(e.kind == STEP and loop.contains(e.stmt) for e in events):
        return False  # stepping between the passes: the next backward runs through changed weights
    entering = [d for d in scope.definitions(name) if d.order < loop.first_order]
    return bool(entering) and loop.outer.contains(entering[-1].stmt) and entering[-1].kind in {"assign", "unpack"}


def _method_span(scope: Scope) -> Optional[_Span]:
    if scope.class_node is None or not scope.stmts:
        return None
    return _Span(lambda stmt: stmt.scope is scope and stmt.is_statement, scope.stmts[0].order, scope.name)


def _enclosing_batch(name: str, before: int, scope: Scope, depth: int = 0) -> bool:
    """The value entering the loop is the target of an enclosing loop (`for batch in batches:`),
    directly or through its own methods (`batch = batch.to(device)`)."""
    entering = [d for d in scope.definitions(name) if d.order < before]
    if not entering or depth > 4:
        return False
    last = entering[-1]
    if last.kind == "for":
        return True
    root = last.value
    while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    return (
        last.kind == "assign" and isinstance(root, ast.Name) and root.id == name
        and _enclosing_batch(name, last.order, scope, depth + 1)
    )


def _carried(scope: Scope, loop: _Span, facts: ModuleFacts | AnalysedModule, events) -> dict[str, list[Definition]]:
    """Names whose first use in an iteration feeds the forward pass with the graph-carrying value
    of the previous iteration."""
    carried: dict[str, list[Definition]] = {}
    first: dict[str, Occurrence] = {}
    for occurrence in scope.occurrences:
        if loop.contains(occurrence.stmt) and occurrence.name not in first:
            first[occurrence.name] = occurrence
    loop_graph = backward_ancestry(scope, events, only=lambda e: loop.contains(e.stmt) and not e.helper, into_outputs=True)
    backward_stmts = {id(e.stmt) for e in events if e.kind == BACKWARD and loop.contains(e.stmt)}
    last_backward = max(e.order for e in events if e.kind == BACKWARD and loop.contains(e.stmt))
    for name, occurrence in first.items():
        if occurrence.write or occurrence.detached or not occurrence.in_call_arg:
            continue
        if loop.method is not None and not own_attribute(name):
            continue  # a method's locals start anew on every call
        if not _feeds_backward(occurrence.stmt, scope, loop_graph, backward_stmts):
            continue  # logged or printed, not fed to the model
        inside = [d for d in scope.definitions(name) if loop.contains(d.stmt)]
        if not inside or any(d.kind not in {"assign", "unpack"} for d in inside):
            continue  # in-place detach_, loop targets, augmented updates: not a carried model state
        if _enclosing_batch(name, loop.first_order, scope):
            continue  # the batch of an enclosing loop over the data, reworked step by step: data
        if _whole_sequence(name, loop, scope, events):
            continue  # per-step losses backpropagated through the whole sequence, graph kept on purpose
        # What reaches the next iteration: the assignments after the last backward when there
        # are any (`inp = out` after backward), else all of them.
        after = [d for d in inside if d.order > last_backward]
        deciding = after[-1:] if after else inside
        if after and _fresh_after_backward(name, after[-1], scope, loop, last_backward, facts):
            continue  # `out = model(x_new)` from a fresh leaf: the next iteration backwards a new graph once
        if any(_made_by_layers_out_of_sight(d, facts) for d in deciding):
            continue  # what the project's forward hands back is not known: silent
        if any(_field_out_of_sight(d, facts) for d in deciding):
            continue  # `memory = outputs.memory` of a model whose forward is not in sight: it may detach
        if all(facts.flow.definition_carries(d) for d in deciding):
            carried[name] = inside
    return carried


def _field_out_of_sight(definition: Definition, facts) -> bool:
    """`memory = outputs.memory` (or `outputs["memory"]`) where the code that builds `outputs` is
    not in sight: memory models often hand their state back detached (Transformer-XL's `mems`),
    so only a project forward that shows the field holding a graph counts."""
    value = definition.value
    if definition.kind != "assign" or not isinstance(value, (ast.Attribute, ast.Subscript)):
        return False
    if not isinstance(value.value, ast.Name) or isinstance(value, ast.Subscript) and not isinstance(value.slice, ast.Constant):
        return False
    return facts.flow.output_field_reading(value, definition.stmt) is not True


def _made_by_layers_out_of_sight(definition: Definition, facts) -> bool:
    """`loss, mems = model(x, mems)` where the project model's `forward` returns, in that place, a
    list it fills from layers it walks (`for attn, ff in self.layers: x, mem = attn(x);
    new_mems.append(mem)`): each layer is any module of the list, so whether what it hands back
    is detached (as memory-transformer layers do) is out of sight."""
    call = definition.value
    if definition.kind != "unpack" or not isinstance(call, ast.Call) or len(definition.index) != 1:
        return False
    resolver = facts.analysed.resolver if isinstance(facts, ModuleFacts) else facts.resolver
    forward = resolver.forward_of(call, definition.stmt.scope)
    if forward is None:
        return False
    index = definition.index[0]
    # the returns that can be unpacked so (`return logits` on another path hands back no pair)
    returned = [value.elts[index] for value, _ in forward.scope.returns
                if isinstance(value, ast.Tuple) and len(value.elts) > index]
    return bool(returned) and all(_filled_by_walked_layers(value, forward.scope) for value in returned)


def _filled_by_walked_layers(value: ast.expr, scope: Scope) -> bool:
    """`value` is a list made empty (or None) and filled only with what calls of a loop's own
    target return (`x, mem = layer(x)` under `for layer in self.layers:`)."""
    if not isinstance(value, ast.Name):
        return False
    made = scope.definitions(value.id)
    if not made or any(d.kind != "assign" or not _empty(d.value) for d in made):
        return False
    appended = [site.call.args[0] for site in scope.calls
                if dotted(site.call.func) == f"{value.id}.append" and len(site.call.args) == 1]
    if not appended:
        return False
    targets = scope.loop_targets()
    for element in appended:
        if not isinstance(element, ast.Name):
            return False
        sources = scope.definitions(element.id)
        if not sources or not all(
            d.kind in {"assign", "unpack"} and isinstance(d.value, ast.Call) and dotted(d.value.func) in targets
            for d in sources
        ):
            return False
    return True


def _empty(value: Optional[ast.expr]) -> bool:
    """`[]`, `None`, or `[] if cond else None`."""
    if isinstance(value, ast.IfExp):
        return _empty(value.body) and _empty(value.orelse)
    return isinstance(value, ast.List) and not value.elts or is_constant(value, None)


def _module_class(call: Optional[ast.expr], facts: ModuleFacts) -> Optional[str]:
    """The class a called module was built from in this file (`self.rnn = nn.LSTM(...)`)."""
    if not isinstance(call, ast.Call):
        return None
    name = dotted(call.func)
    for scope in facts.collected.scopes:
        for definition in scope.definitions(name or ""):
            if isinstance(definition.value, ast.Call):
                return last_part(dotted(definition.value.func))
    return None


def _detach_statement(name: str, definition: Definition, scope: Scope, loop: _Span, facts) -> tuple[str, bool]:
    """The detach statement for `name`, and whether its shape is known (so the fix is safe)."""
    if len(definition.index) > 1:
        return f"{name} = {name}.detach()", True  # one tensor of an unpacked (h, c)
    cls = _module_class(definition.value, facts)
    if cls in _TUPLE_STATE:
        return f"{name} = tuple(s.detach() for s in {name})", True
    if cls in _TENSOR_STATE:
        return f"{name} = {name}.detach()", True
    before = [d for d in scope.definitions(name) if d.order < loop.first_order and d.kind == "assign"]
    if before:
        initial = before[-1].value
        if isinstance(initial, (ast.Tuple, ast.List)):  # `hidden = (h0, c0)`
            return f"{name} = tuple(s.detach() for s in {name})", True
        if isinstance(initial, ast.Call) and last_part(dotted(initial.func)) in _FACTORIES:
            return f"{name} = {name}.detach()", True
    return f"{name} = {name}.detach()", False


def _fresh_after_backward(
    name: str, definition: Definition, scope: Scope, loop: _Span, last_backward: int, facts: ModuleFacts | AnalysedModule
) -> bool:
    """What `definition` gives `name` after the iteration's last backward is built only from values
    made after that backward (a fresh leaf `x = x.detach().requires_grad_()`, the model's
    parameters): no part of its graph was backwarded, and it reads no state carried from an earlier
    iteration (not itself, no name the loop binds later), so the next iteration backwards it once."""
    if loop.node is None:
        return False
    flow = facts.flow
    pending, seen = [definition], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if current.value is None or current.kind not in {"assign", "unpack"}:
            return False
        if not _on_every_iteration(current.stmt, loop.node, scope):
            return False  # `if step % 100 == 0: temp = ...`: the other iterations carry the old graph on
        for read in read_outside_detach(current.value):
            base, updates = reaching(read, scope, current.order, current.stmt)
            if base is None or not loop.contains(base.stmt):
                later = [d for d in scope.definitions(read) if loop.contains(d.stmt) and d.order >= current.order]
                if read == name or later or (base is not None and flow.definition_carries(base)):
                    return False  # state carried in from the iteration before
                continue
            if updates or base.order < last_backward:
                if updates or flow.definition_carries(base):
                    return False  # made before the backward: its graph was backwarded already
                continue
            pending.append(base)
    return True


def _on_every_iteration(stmt: Stmt, loop_node: ast.AST, scope: Scope) -> bool:
    """The statement sits in the loop's body under no `if` or inner loop (a `with` or `try` runs it
    each time), and no `continue` of this loop comes before it: every iteration that goes on runs it."""
    blocks = stmt.blocks_inside(loop_node)
    if blocks is None or any(not isinstance(node, (ast.With, ast.AsyncWith, ast.Try)) for node, _ in blocks):
        return False
    return not any(
        isinstance(other.node, ast.Continue) and other.order < stmt.order and other.loop is not None
        and other.loop.node is loop_node
        for other in scope.stmts
    )


def check(facts: ModuleFacts) -> Iterator[Violation]:
    reported: set[int] = set()
    for sf in facts.scopes:
        scope = sf.scope
        spans = [_loop_span(loop) for loop in scope.loops]
        method = _method_span(scope)
        if method is not None:
            spans.append(method)
        for loop in spans:
            backwards = [e for e in sf.events if e.kind == BACKWARD and not e.helper and loop.contains(e.stmt)]
            if not backwards:
                continue
            by_statement: dict[int, list[tuple[str, Definition]]] = {}
            for name, definitions in _carried(scope, loop, facts, sf.events).items():
                last = definitions[-1]
                by_statement.setdefault(id(last.stmt), []).append((name, last))
            for group in by_statement.values():
                stmt = group[0][1].stmt
                if id(stmt.node) in reported:
                    continue
                reported.add(id(stmt.node))
                names = ", ".join(f"`{n}`" for n, _ in group)
                fix = None
                # After the backward, and after the state's last assignment when that comes later.
                anchor = max([backwards[-1].stmt] + [d.stmt for _, d in group], key=lambda s: s.order)
                lines, safe = [], True
                for name, definition in group:
                    text, known = _detach_statement(name, definition, scope, loop, facts)
                    lines.append(text)
                    safe = safe and known
                edit = insert_after(facts.source, anchor.node, lines) if anchor.is_statement else None
                if any(number_state(facts.flow, scope, n, loop.first_order) for n, _ in group):
                    edit = None  # `temp = max(temp * 0.99, t_min)`: `.detach()` would raise on a number
                if edit is not None:
                    fix = Fix(f"Detach {names} right after backward", "safe" if safe else "unsafe", (edit,))
                if loop.method is not None:
                    message = (
                        f"{names} lives on the object and carries this call's autograd graph into the next "
                        f"call of `{loop.method}`, which runs backward every time: detach it after backward"
                    )
                else:
                    message = (
                        f"{names} carries this iteration's autograd graph into the next one while backward "
                        f"runs every iteration: detach it after backward"
                    )
                yield Violation(CODE, message, stmt.node, fix)
        yield from _in_called_methods(facts, sf, reported)


def _self_calls_feeding(scope: Scope, keep, graph: set[str], feeding: set[int]):
    """The `self.m(...)` call sites of `scope` among the statements `keep` selects whose result
    feeds `graph` (what a backward, or the method's return, runs through)."""
    for site in scope.calls:
        func = site.call.func
        if not keep(site.stmt) or not (isinstance(func, ast.Attribute) and dotted(func.value) == "self"):
            continue  # a method of the same object: its `self.` state is the caller's state
        if _feeds_backward(site.stmt, scope, graph, feeding):
            yield site


def _in_called_methods(facts: ModuleFacts, sf, reported: set[int]) -> Iterator[Violation]:
    """State on `self` that a method carries from one call to the next (`out, self.hidden =
    self.rnn(x, self.hidden)` in `forward_step`), where a loop calls that method on the same object
    every iteration (directly, or through methods that return its result) and runs backward on
    what it returns: reported in the method, with the calls that make it a bug. Not when the loop
    itself resets or detaches that state."""
    scope = sf.scope
    for loop in scope.loops:
        backwards = [e for e in sf.events if e.kind == BACKWARD and not e.helper and loop.contains(e.stmt)]
        if not backwards:
            continue
        graph = backward_ancestry(scope, sf.events, only=lambda e: loop.contains(e.stmt) and not e.helper)
        backward_stmts = {id(e.stmt) for e in backwards}
        managed = {o.name for o in scope.occurrences if loop.contains(o.stmt) and (o.write or o.detached)}
        last = backwards[-1].order
        # (call site, the scope it is in, that scope's module, the methods in between, the loop's call)
        pending: list[tuple[CallSite, Scope, AnalysedModule, tuple[str, ...], CallSite]] = [
            (site, scope, facts.analysed, (), site)
            for site in _self_calls_feeding(scope, lambda st: loop.contains(st) and st.order <= last, graph, backward_stmts)
        ]
        seen: set[int] = set()
        while pending:
            site, caller, caller_module, through, loop_site = pending.pop(0)
            callee = caller_module.resolver.resolve(site.call, caller)
            if callee is None or callee.scope is caller or callee.scope.class_node is None or id(callee.scope) in seen:
                continue
            seen.add(id(callee.scope))
            method = _method_span(callee.scope)
            if method is None or not callee.scope.returns:
                continue
            # What the method returns is what the loop's backward runs through.
            returned = [Event(BACKWARD, stmt, None, tensor=value) for value, stmt in callee.scope.returns]
            if len(through) < 3:
                returns_graph = backward_ancestry(callee.scope, returned)
                return_stmts = {id(e.stmt) for e in returned}
                pending.extend(
                    (inner, callee.scope, callee.module, (*through, callee.scope.name), loop_site)
                    for inner in _self_calls_feeding(callee.scope, method.contains, returns_graph, return_stmts)
                )
            carried = _carried(callee.scope, method, callee.module, returned)
            group = [(name, ds[-1]) for name, ds in carried.items() if name not in managed]
            if not group:
                continue
            stmt = group[0][1].stmt
            if id(stmt.node) in reported or any(d.stmt is not stmt for _, d in group):
                continue
            reported.add(id(stmt.node))
            names = ", ".join(f"`{n}`" for n, _ in group)
            path = f"called every iteration from `{scope.name}`, line {getattr(loop_site.stmt.node, 'lineno', '?')}"
            if through:
                path += ", through " + ", ".join(f"`{name}()`" for name in through)
            message = (
                f"{names} lives on the object and carries one call's autograd graph into the next call of "
                f"`{callee.scope.name}`, while backward runs every iteration ({path}): detach it after backward"
            )
            if callee.module is not facts.analysed:
                module = callee.module
                if module.path is not None and module.source is not None:
                    yield Violation(CODE, message, stmt.node, origin=Origin(str(module.path), module.source))
                continue
            fix = None
            anchor = backwards[-1].stmt
            lines, safe = [], True
            for name, definition in group:
                text, known = _detach_statement(name, definition, callee.scope, method, facts)
                lines.append(text)
                safe = safe and known
            edit = insert_after(facts.source, anchor.node, lines) if anchor.is_statement and safe else None
            if edit is not None:  # in the loop, after its backward: `self` is the same object there
                fix = Fix(f"Detach {names} right after backward in `{scope.name}`", "safe", (edit,))
            yield Violation(CODE, message, stmt.node, fix)
