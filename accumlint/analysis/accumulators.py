"""Accumulator variables: where gradients are added up by hand (Keras/TensorFlow, where a tape
returns fresh gradients and nothing adds up in a `.grad`). A collection of variables (a list of
`tf.Variable`, often on `self`) receives `assign_add(g)` of gradients, is set back to zero with
`assign(zeros)`, and is handed to `apply_gradients`. Whether what is applied is the window's mean
(divided by k in the accumulation, at the apply, or the loss divided before `tape.gradient`) or
its sum is judged from the code, or left unknown."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional

from accumlint.analysis.collect import FOR_LOOPS, Collected, Definition, Scope, Stmt
from accumlint.analysis.exprs import dotted, int_value, is_number, last_part, method_of, names_in, positional, walk
from accumlint import frameworks
from accumlint.frameworks import keras

if TYPE_CHECKING:
    from accumlint.analysis.calls import AnalysedModule
    from accumlint.analysis.events import Event
    from accumlint.analysis.facts import ModuleFacts
    from accumlint.analysis.roles import Roles

SUM, MEAN, UNKNOWN = "sum", "mean", "unknown"
BACKWARD, STEP = "backward", "step"  # EventKind values (events imports this module)
_MAX_HOPS = 6
_DIVIDING_FUNCTIONS = frozenset({"divide", "truediv", "div", "divide_no_nan"})
_WINDOW_WORDS = ("accum", "grad", "update", "micro")


@dataclass(eq=False, repr=False)
class Added:
    """`acc[i].assign_add(value)`: one gradient added into the collection."""

    call: Optional[ast.Call]
    value: ast.expr
    stmt: Stmt
    source: Optional[ast.expr] = None  # where the gradients come from, when not `value` itself


@dataclass(eq=False, repr=False)
class Applied:
    """A call that applies the collection (`apply_gradients(zip(acc, vars))`): `values` is the
    expression applied in the collection's place (the collection itself, or a list built from it)."""

    call: ast.Call
    values: ast.expr
    stmt: Stmt


@dataclass(eq=False, repr=False)
class Accumulator:
    name: str  # the collection, `self.accu_gradients` or `acc`
    scopes: list[Scope]  # where it lives: the methods of its class, or one function
    added: list[Added] = field(default_factory=list)
    resets: list[tuple[Stmt, ast.Call]] = field(default_factory=list)  # the statement (a `for` over it, when that is all the loop does)
    applied: list[Applied] = field(default_factory=list)
    rescaled: bool = False  # `acc.assign(acc / count)`: divided in place before it is applied


def _is_zero(value: Optional[ast.expr]) -> bool:
    if value is None:
        return False
    if is_number(value):
        return int_value(value) == 0 or (isinstance(value, ast.Constant) and value.value == 0)
    if isinstance(value, ast.Call):
        return last_part(dotted(value.func)) in keras.ZERO_FACTORIES
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return _is_zero(value.left) or _is_zero(value.right)
    return False


def _for_definition(name: str, stmt: Stmt) -> Optional[Definition]:
    """The loop target definition of `name` in the loops around `stmt`."""
    for loop in reversed(stmt.loops):
        if name in loop.targets:
            for definition in stmt.scope.definitions(name):
                if definition.kind == "for" and definition.stmt.loop is loop:
                    return definition
    return None


def _iterated(iterable: Optional[ast.expr], index: tuple[int, ...], part: bool = False) -> Optional[ast.expr]:
    """What a loop target at `index` walks over: `zip(acc, grads)` at (0,) -> acc,
    `enumerate(grads)` at (1,) -> grads, `acc` at () -> acc; with `part`, also the collection
    whose elements the target is a part of (`grad` of `for grad, var in grads_and_vars`)."""
    if iterable is None:
        return None
    if isinstance(iterable, ast.Call):
        func = dotted(iterable.func)
        if func == "enumerate" and index[:1] == (1,):
            inner = positional(iterable, 0)
            return _iterated(inner, index[1:], part) if inner is not None else None
        if func == "zip" and index:
            inner = positional(iterable, index[0])
            return _iterated(inner, index[1:], part) if inner is not None else None
        if func in {"enumerate", "zip"}:
            return None
    return iterable if not index or part else None


def _collection_of(receiver: ast.expr, stmt: Stmt) -> Optional[str]:
    """The collection an `assign_add` receiver belongs to: `acc[i]` -> acc, `a` of
    `for a, g in zip(acc, grads)` -> acc, `self.acc_w` -> itself."""
    if isinstance(receiver, ast.Subscript):
        return dotted(receiver.value)
    name = dotted(receiver)
    if name is None:
        return None
    if isinstance(receiver, ast.Name):
        definition = _for_definition(name, stmt)
        if definition is not None:
            source = _iterated(definition.value, definition.index)
            if source is None:
                return None
            if isinstance(source, ast.Call) and dotted(source.func) in {"range"}:
                return None
            return dotted(source)
        return None
    return name


def _trace(expr: ast.expr, stmt: Stmt, hops: int = 0) -> Iterator[tuple[str, object, Stmt]]:
    """Where a value comes from, one step at a time: ("gradient", call, stmt) for a
    `tape.gradient(...)`, ("param", name, stmt) for a parameter of the function, ("name", name,
    stmt) for any name on the way, ("other", node, stmt) for what cannot be followed."""
    if hops > _MAX_HOPS:
        yield "other", expr, stmt
        return
    if isinstance(expr, ast.Subscript):
        yield from _trace(expr.value, stmt, hops + 1)
        return
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
        for generator in expr.generators:
            yield from _trace(generator.iter, stmt, hops + 1)
        return
    if isinstance(expr, ast.BinOp):  # `grad / n`: where each side comes from
        yield from _trace(expr.left, stmt, hops + 1)
        yield from _trace(expr.right, stmt, hops + 1)
        return
    if isinstance(expr, ast.Call):
        receiver, method = method_of(expr)
        if method == keras.GRADIENT_METHOD and receiver is not None:
            yield "gradient", expr, stmt
            return
        if method in keras.UNSCALE_GRADIENT_METHODS or dotted(expr.func) in {"list", "zip", "tuple"}:
            for arg in expr.args:
                yield from _trace(arg, stmt, hops + 1)
            return
        yield "other", expr, stmt
        return
    name = dotted(expr)
    if name is None:
        yield "other", expr, stmt
        return
    yield "name", name, stmt
    if isinstance(expr, ast.Name):
        definition = _for_definition(name, stmt)
        if definition is not None:
            source = _iterated(definition.value, definition.index, part=True)
            if source is None:
                yield "other", expr, stmt
            else:
                yield from _trace(source, definition.stmt, hops + 1)
            return
    reaching = [d for d in stmt.scope.definitions(name) if d.order < stmt.order and d.stmt.compatible(stmt)]
    if not reaching:
        if name in stmt.scope.params:
            yield "param", name, stmt
        else:
            yield "other", expr, stmt
        return
    last = reaching[-1]
    if last.kind == "param":
        yield "param", name, stmt
    elif last.kind == "assign" and last.value is not None:
        yield from _trace(last.value, last.stmt, hops + 1)
    else:
        yield "other", expr, stmt


def _unit(scope: Scope, name: str, collected: Collected) -> list[Scope]:
    """Where the collection lives: the methods of its class (`self.acc`), the module and every
    function that reads it as a global (`acc` made at module level, added to in a `train_step`
    function and applied in the loop that calls it), or one function."""
    if name.startswith("self.") and scope.class_scopes:
        return list(scope.class_scopes)
    head = name.split(".")[0]
    module = collected.scopes[0] if collected.scopes else None
    if module is None or scope is module or _binds(scope, head) or not _binds(module, head):
        return [scope]
    if any(_binds(s, head) for s in _enclosing(scope) if s is not module):
        return [scope]  # a closure's variable, not the module's
    return [module] + [
        s for s in collected.scopes[1:]
        if not _binds(s, head) and any(o.name.split(".")[0] == head for o in s.occurrences)
    ]


def _binds(scope: Scope, name: str) -> bool:
    return name in scope.defs or name in scope.params


def _enclosing(scope: Scope) -> Iterator[Scope]:
    current = scope.parent
    while current is not None:
        yield current
        current = current.parent


def _enclosing_for(stmt: Stmt) -> Optional[Stmt]:
    """The header of a `for` whose whole body is this one statement."""
    for node, branch in reversed(stmt.path):
        if isinstance(node, FOR_LOOPS) and branch == "body":
            if len(node.body) == 1 and node.body[0] is stmt.node and not node.orelse:
                return stmt.scope.header_of(node)
        return None
    return None


def _applied_values(call: ast.Call) -> Optional[ast.expr]:
    """What an apply call applies as the gradients: `zip(G, vars)` -> G, `apply(G, vars)` -> G,
    `list(zip(G, vars))` -> G."""
    first = positional(call, 0)
    if first is None:
        first = next((kw.value for kw in call.keywords if kw.arg in {"grads_and_vars", "grads"}), None)
    while isinstance(first, ast.Call) and dotted(first.func) in {"list", "tuple"} and first.args:
        first = first.args[0]
    if isinstance(first, ast.Call) and dotted(first.func) == "zip":
        return positional(first, 0)
    return first


def _is_apply(call: ast.Call) -> bool:
    """`optimizer.apply_gradients(...)` (or a saved `self._orig_apply_gradients(...)`), Keras 3's
    `optimizer.apply(grads, vars)`."""
    receiver, method = method_of(call)
    name = last_part(dotted(call.func))
    if any(step in name for step in keras.STEP_METHODS):
        return True
    owner = last_part(dotted(receiver)).lower() if receiver is not None else ""
    return method in keras.OPTIMIZER_ONLY_STEP_METHODS and ("optim" in owner or owner in {"opt", "optimiser"})


def find(collected: Collected) -> list[Accumulator]:
    """The accumulator collections of a module, with where they are added to, reset and applied."""
    found: dict[tuple[int, str], Accumulator] = {}
    for scope in collected.scopes:
        for site in scope.calls:
            receiver, method = method_of(site.call)
            if method != keras.ADD_METHOD or receiver is None or not site.stmt.is_statement:
                continue
            value = positional(site.call, 0)
            if value is None or is_number(value) or not _gradient_like(value, site.stmt):
                continue
            name = _collection_of(receiver, site.stmt)
            if name is None:
                continue
            unit = _unit(scope, name, collected)
            key = (id(unit[0]) if not name.startswith("self.") else id(unit[0].class_node), name)
            accumulator = found.setdefault(key, Accumulator(name, unit))
            accumulator.added.append(Added(site.call, value, site.stmt))
    for scope in collected.scopes:
        for name, definitions in scope.defs.items():
            for definition in definitions:
                added = _list_addition(name, definition)
                if added is not None:
                    unit = _unit(scope, name, collected)
                    key = (id(unit[0]) if not name.startswith("self.") else id(unit[0].class_node), name)
                    found.setdefault(key, Accumulator(name, unit)).added.append(added)
    for accumulator in found.values():
        for scope in accumulator.scopes:
            for definition in scope.definitions(accumulator.name):
                value = definition.value
                if definition.kind == "assign" and isinstance(value, ast.ListComp) and definition.stmt.is_statement:
                    if isinstance(value.elt, ast.Call) and _is_zero(value.elt):  # `acc = [tf.zeros_like(v) for v in vs]`
                        if definition.stmt.loops:
                            accumulator.resets.append((definition.stmt, value.elt))
            for site in scope.calls:
                receiver, method = method_of(site.call)
                if method == keras.ASSIGN_METHOD and receiver is not None and site.stmt.is_statement:
                    if _collection_of(receiver, site.stmt) != accumulator.name:
                        continue
                    value = positional(site.call, 0)
                    if _is_zero(value):
                        accumulator.resets.append((_enclosing_for(site.stmt) or site.stmt, site.call))
                    elif value is not None and _factor(value, site.stmt, None) != SUM:
                        accumulator.rescaled = True
                elif _is_apply(site.call):
                    values = _applied_values(site.call)
                    if values is not None and _applies(values, accumulator.name, site.stmt):
                        accumulator.applied.append(Applied(site.call, values, site.stmt))
    return list(found.values())


def _list_addition(name: str, definition: Definition) -> Optional[Added]:
    """`acc = [a + g for a, g in zip(acc, grads)]`: a Python list of tensors that adds the
    gradients to itself, element by element."""
    value = definition.value
    if definition.kind != "assign" or not isinstance(value, ast.ListComp) or len(value.generators) != 1:
        return None
    generator = value.generators[0]
    iterable, target, element = generator.iter, generator.target, value.elt
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "zip" and len(iterable.args) == 2):
        return None
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(t, ast.Name) for t in target.elts)):
        return None
    if not (isinstance(element, ast.BinOp) and isinstance(element.op, ast.Add)) or generator.ifs:
        return None
    own = [i for i, arg in enumerate(iterable.args) if dotted(arg) == name]
    if len(own) != 1:
        return None
    mine = target.elts[own[0]].id  # type: ignore[attr-defined]
    theirs = target.elts[1 - own[0]].id  # type: ignore[attr-defined]
    gradients = iterable.args[1 - own[0]]
    operands = [element.left, element.right]
    if sum(1 for o in operands if isinstance(o, ast.Name) and o.id == mine) != 1:
        return None
    added = next(o for o in operands if not (isinstance(o, ast.Name) and o.id == mine))
    if theirs not in names_in(added) or not _gradient_like(gradients, definition.stmt):
        return None
    return Added(None, added, definition.stmt, gradients)


def _gradient_like(value: ast.expr, stmt: Stmt) -> bool:
    """The added value is a gradient: it comes from `tape.gradient`, or through names that say so."""
    for kind, what, _ in _trace(value, stmt):
        if kind == "gradient":
            return True
        if kind in {"name", "param"} and "grad" in last_part(str(what)).lower():
            return True
    return False


def _applies(values: ast.expr, name: str, stmt: Stmt) -> bool:
    bound = {
        n.id for comp in walk(values) if isinstance(comp, (ast.ListComp, ast.GeneratorExp))
        for generator in comp.generators for n in walk(generator.target) if isinstance(n, ast.Name)
    }
    if name in names_in(values) and name.split(".", 1)[0] not in bound:
        return True
    for kind, what, _ in _trace(values, stmt):
        if kind == "name" and what == name:
            return True
    return False


def of_module(facts: ModuleFacts) -> list[Accumulator]:
    """The module's accumulators, found once per analysis."""
    return facts.cached("accumulators", lambda: of_collected(facts.collected))


_FOUND: dict[int, tuple[Collected, list[Accumulator]]] = {}


def forget_accumulators() -> None:
    _FOUND.clear()


def of_collected(collected: Collected) -> list[Accumulator]:
    """The accumulators of a module, found once per parse."""
    known = _FOUND.get(id(collected))
    if known is None or known[0] is not collected:
        if len(_FOUND) > 32:
            _FOUND.clear()
        known = _FOUND[id(collected)] = (collected, find(collected))
    return known[1]


def applies_accumulators(event: Event, module: AnalysedModule) -> bool:
    """The step applies accumulator variables (or values built from them, such as a masked
    `cast(should_apply) * acc`): the window is kept by the accumulators, not by a gate on the step."""
    return event.call is not None and any(
        applied.call is event.call for accumulator in of_collected(module.collected) for applied in accumulator.applied
    )


def resets(collected: Collected) -> list[tuple[Stmt, ast.Call]]:
    """The statements that set accumulators back to zero (they play zero_grad's part)."""
    return [reset for accumulator in of_collected(collected) for reset in accumulator.resets]


# --- judgments ------------------------------------------------------------------------------
def _boolean(expr: ast.expr, stmt: Stmt, facts: Optional[ModuleFacts], depth: int = 0) -> bool:
    """A truth value (a comparison, `tf.equal`, `tf.logical_not`, a name or helper giving one)."""
    if depth > 4:
        return False
    if isinstance(expr, (ast.Compare, ast.BoolOp)) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)):
        return True
    if isinstance(expr, ast.Call):
        if last_part(dotted(expr.func)) in keras.BOOLEAN_FUNCTIONS:
            return True
        if facts is not None:
            callee = facts.analysed.resolver.resolve(expr, stmt.scope)
            if callee is not None and callee.scope.returns:
                return all(_boolean(v, s, facts, depth + 1) for v, s in callee.scope.returns)
        return False
    name = dotted(expr)
    if name is None:
        return False
    reaching = [d for d in stmt.scope.definitions(name) if d.order < stmt.order]
    return bool(reaching) and reaching[-1].kind == "assign" and reaching[-1].value is not None and _boolean(
        reaching[-1].value, reaching[-1].stmt, facts, depth + 1
    )


def _mask(expr: ast.expr, stmt: Stmt, facts: Optional[ModuleFacts]) -> bool:
    """A factor of 0 or 1: `tf.cast(can_apply, dtype)` of a truth value, or a name bound to one."""
    if isinstance(expr, ast.Call) and last_part(dotted(expr.func)) == "cast" and expr.args:
        return _boolean(expr.args[0], stmt, facts)
    name = dotted(expr)
    if name is None:
        return False
    reaching = [d for d in stmt.scope.definitions(name) if d.order < stmt.order]
    return bool(reaching) and reaching[-1].kind == "assign" and reaching[-1].value is not None and _mask(
        reaching[-1].value, reaching[-1].stmt, facts
    )


def _factor(expr: ast.expr, stmt: Stmt, facts: Optional[ModuleFacts]) -> str:
    """How an expression built from the accumulated values scales them: MEAN when something
    divides, SUM when nothing does (a 0/1 mask is no division), UNKNOWN for any other factor."""
    result = SUM
    for node in walk(expr):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
            return MEAN
        if isinstance(node, ast.Call) and last_part(dotted(node.func)) in _DIVIDING_FUNCTIONS:
            return MEAN
        if isinstance(node, ast.Call) and method_of(node)[1] in {"__truediv__", "div"}:
            return MEAN
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            if not (_mask(node.left, stmt, facts) or _mask(node.right, stmt, facts)):
                result = UNKNOWN
        if isinstance(node, ast.Call) and last_part(dotted(node.func)) in {"multiply", "scale"}:
            result = UNKNOWN
    return result


def _applied_scaling(applied: Applied, name: str, facts: Optional[ModuleFacts]) -> str:
    values = applied.values
    if dotted(values) == name:
        return SUM
    if dotted(values) is not None:  # a name built from the collection: follow it once
        reaching = [d for d in applied.stmt.scope.definitions(dotted(values) or "") if d.order < applied.stmt.order]
        if len(reaching) == 1 and reaching[0].kind == "assign" and reaching[0].value is not None:
            return _factor(reaching[0].value, reaching[0].stmt, facts)
        return UNKNOWN
    if isinstance(values, (ast.ListComp, ast.GeneratorExp, ast.Call, ast.Subscript)):
        return _factor(values, applied.stmt, facts)
    return UNKNOWN


def _k_names(accumulator: Accumulator, facts: ModuleFacts) -> set[str]:
    """Names that may stand for the window size: those in the k the code counts to, and any name
    that says accumulation (`self.gradient_accumulation_steps`)."""
    k = window_size(accumulator)
    names = {n for n in names_in(k) if n not in {"self", "cls"} and n not in facts.collected.imports} if k is not None else set()
    for scope in facts.collected.scopes:
        names.update(o.name for o in scope.occurrences if "accum" in last_part(o.name).lower())
    return names


def _gradient_scaling(added: Added, facts: ModuleFacts, k_names: set[str]) -> str:
    """Whether the gradients added were taken of a loss divided by the window (MEAN), of an
    undivided one (SUM), or cannot be told."""
    traced = added.source if added.source is not None else added.value
    sources = [(kind, what, stmt) for kind, what, stmt in _trace(traced, added.stmt) if kind != "name"]
    if len(sources) != 1:
        return UNKNOWN
    kind, what, stmt = sources[0]
    if kind == "gradient":
        return _tape_target_scaling(what, stmt, facts, k_names)  # type: ignore[arg-type]
    if kind == "param" and stmt.scope.name in keras.STEP_METHODS:
        # A patched or overridden `apply_gradients(grads_and_vars)`: its gradients come from the
        # model's train_step, which takes them of the undivided loss unless this file shows otherwise.
        tapes = [site for sf in facts.scopes for site in sf.scope.calls if method_of(site.call)[1] == keras.GRADIENT_METHOD]
        verdicts = {_tape_target_scaling(site.call, site.stmt, facts, k_names) for site in tapes}
        if not verdicts:  # Keras's own train_step under `fit`, when the file shows one
            fits = facts.calls_named(keras.FIT_METHOD)
            overrides = any(s.name == keras.TRAIN_STEP for s in facts.collected.functions.get(keras.TRAIN_STEP, []))
            return SUM if fits and not overrides else UNKNOWN
        return SUM if verdicts == {SUM} else UNKNOWN
    return UNKNOWN


def _tape_target_scaling(call: ast.Call, stmt: Stmt, facts: ModuleFacts, k_names: set[str]) -> str:
    target = positional(call, 0)
    if target is None:
        return UNKNOWN
    scaling = facts.flow.scaling(target, stmt, k_names)  # a call handed k may divide by it inside
    if scaling.unknown:
        return UNKNOWN
    return MEAN if scaling.divided else SUM


def applied_as_sum(accumulator: Accumulator, applied: Applied, facts: ModuleFacts) -> bool:
    """Every gradient added is undivided, nothing divides on the way in, and the apply does not
    divide: the window's sum reaches the optimizer."""
    if not accumulator.added or accumulator.rescaled or _applied_scaling(applied, accumulator.name, facts) != SUM:
        return False
    k_names = _k_names(accumulator, facts)
    for value, stmt in compiled_losses(facts.collected):
        # `self.compiled_loss(...)` is whatever `compile(loss=fn)` was given: it may divide.
        scaling = facts.flow.scaling(value, stmt, k_names)
        if scaling.unknown or scaling.divided:
            return False
    for added in accumulator.added:
        if _factor(added.value, added.stmt, facts) != SUM:
            return False
        if _gradient_scaling(added, facts, k_names) != SUM:
            return False
    return True


def _counters(accumulator: Accumulator) -> set[str]:
    """Names incremented by one in the accumulator's functions (`self.count.assign_add(1)`, `step += 1`)."""
    counters: set[str] = set()
    for scope in accumulator.scopes:
        for site in scope.calls:
            receiver, method = method_of(site.call)
            if method == keras.ADD_METHOD and receiver is not None and int_value(positional(site.call, 0)) == 1:
                counters.add(dotted(receiver) or "")
        for name, definitions in scope.defs.items():
            if any(d.kind == "aug" and d.op == "AddAssign" and int_value(d.value) == 1 for d in definitions):
                counters.add(name)
    counters.discard("")
    return counters


def _sizes_in(expr: ast.AST, counters: set[str]) -> Iterator[ast.expr]:
    """The k of `step % k`, `tf.math.mod(step, k)`, `tf.equal(count, k)` or `count == k` in an expression."""
    for sub in walk(expr):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mod) and not isinstance(sub.left, ast.Constant):
            yield sub.right
        elif isinstance(sub, ast.Call) and last_part(dotted(sub.func)) in keras.MODULO_FUNCTIONS and len(sub.args) == 2:
            yield sub.args[1]
        pair: Optional[tuple[ast.expr, ast.expr]] = None
        if isinstance(sub, ast.Call) and last_part(dotted(sub.func)) in keras.EQUALITY_FUNCTIONS and len(sub.args) == 2:
            pair = (sub.args[0], sub.args[1])
        elif isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], (ast.Eq, ast.GtE)):
            pair = (sub.left, sub.comparators[0])
        if pair is not None:
            for counter, k in (pair, pair[::-1]):
                if dotted(counter) in counters and not isinstance(k, ast.Constant):
                    yield k


def _inspected(stmt: Stmt) -> list[ast.AST]:
    """The expressions a statement evaluates itself (a compound statement's header only)."""
    node = stmt.node
    if isinstance(node, (ast.If, ast.While)):
        return [node.test]
    if isinstance(node, FOR_LOOPS):
        return [node.iter]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in node.items]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try, ast.Match)):
        return []
    return [node]


def window_size(accumulator: Accumulator, applied: Optional[Applied] = None) -> Optional[ast.expr]:
    """The k the code counts the window to: `tf.math.mod(step, k)`, `step % k`, or a counter
    that is incremented by one and compared with k (`tf.equal(self.count, self.k)`). The gate
    around the apply decides; otherwise the one such k the accumulator's functions count to
    (none when they count to several: a logging frequency is no window)."""
    counters = _counters(accumulator)
    if applied is not None:
        for node, _ in reversed(applied.stmt.path):
            if isinstance(node, ast.If):
                for k in _sizes_in(node.test, counters):
                    return k
    candidates: dict[str, ast.expr] = {}
    for scope in accumulator.scopes:
        for stmt in scope.stmts:
            if not stmt.is_statement:
                continue
            for expr in _inspected(stmt):
                for k in _sizes_in(expr, counters):
                    candidates.setdefault(ast.unparse(k), k)
    if len(candidates) > 1:  # the one whose name says accumulation (`accum_iters`, not `total_batches`)
        candidates = {t: k for t, k in candidates.items() if any(w in t.lower() for w in _WINDOW_WORDS)}
    return next(iter(candidates.values())) if len(candidates) == 1 else None


# --- optimizers that accumulate by themselves (Keras 3 `gradient_accumulation_steps`) ----------
def _accumulation_steps(
    optimizer: Optional[ast.expr], roles: Roles, collected: Optional[Collected] = None, depth: int = 0
) -> Optional[ast.expr]:
    """k of an optimizer that accumulates by itself: a name built with the keyword, or the
    construction itself (`keras.optimizers.Adam(1e-3, gradient_accumulation_steps=4)`), or a
    loss-scale wrapper of one (`LossScaleOptimizer(inner)`)."""
    if optimizer is None or depth > 4:
        return None
    name = dotted(optimizer)
    if name is not None:
        steps = roles.accumulating_optimizers.get(name)
        if steps is None and collected is not None:  # `optimizer = LossScaleOptimizer(inner)`
            built = [
                d.value for scope in collected.scopes for d in scope.definitions(name)
                if d.kind == "assign" and isinstance(d.value, ast.Call)
            ]
            if len(built) == 1 and last_part(dotted(built[0].func)) in frameworks.LOSS_SCALE_WRAPPERS:  # type: ignore[union-attr]
                return _accumulation_steps(built[0], roles, collected, depth + 1)
        return steps
    if isinstance(optimizer, ast.Call):
        for word in frameworks.ACCUMULATION_KEYWORDS:
            for kw in optimizer.keywords:
                if kw.arg == word and int_value(kw.value) not in {0, 1}:
                    return kw.value
        inner = positional(optimizer, 0)  # `LossScaleOptimizer(Adam(..., gradient_accumulation_steps=4))`
        if last_part(dotted(optimizer.func)) in frameworks.LOSS_SCALE_WRAPPERS:
            return _accumulation_steps(inner, roles, collected, depth + 1)
    return None


def compile_calls(collected: Collected) -> Iterator[tuple[ast.Call, Stmt]]:
    """`model.compile(optimizer=..., loss=...)` of a TensorFlow/Keras module."""
    roots = {origin.split(".", 1)[0] for origin in collected.imports.values()}
    if not roots & keras.IMPORT_ROOTS:
        return
    for scope in collected.scopes:
        for site in scope.calls:
            receiver, method = method_of(site.call)
            if method == keras.COMPILE_METHOD and receiver is not None and dotted(receiver) not in keras.IMPORT_ROOTS:
                yield site.call, site.stmt


def _compiled_optimizer(call: ast.Call) -> Optional[ast.expr]:
    found = next((kw.value for kw in call.keywords if kw.arg == "optimizer"), None)
    return found if found is not None else positional(call, 0)


def _compiled_steps(collected: Collected, roles: Roles, loss: Optional[str] = None) -> Optional[ast.expr]:
    """k when every `compile` of the module (with this loss function, when given) hands its
    model an optimizer that accumulates by itself."""
    steps = []
    for call, _ in compile_calls(collected):
        if loss is not None and dotted(next((kw.value for kw in call.keywords if kw.arg == "loss"), None)) != loss:
            continue
        steps.append(_accumulation_steps(_compiled_optimizer(call), roles, collected))
    return steps[0] if steps and all(s is not None for s in steps) else None


def optimizer_window(event: Event, module: AnalysedModule) -> Optional[ast.expr]:
    """The k of an optimizer that accumulates (and averages) by itself, for the step it takes or
    for the gradients a Keras backward hands to it: its own construction, the `compile` that gave
    a model `self.optimizer`, or the `compile` a loss function was handed to."""
    roles = module.roles
    if event.kind == STEP:
        steps = _accumulation_steps(ast.Name(event.receiver) if event.receiver else None, roles, module.collected)
        if steps is None and event.receiver is not None and last_part(event.receiver) == "optimizer":
            steps = _compiled_steps(module.collected, roles)
        return steps
    if event.kind != BACKWARD or event.framework not in frameworks.GRAPH_FREE_FRAMEWORKS:
        return None
    if event.call is None:  # a loss function Keras differentiates itself
        return _compiled_steps(module.collected, roles, event.stmt.scope.name)
    scopes = event.stmt.scope.class_scopes or [event.stmt.scope]
    found = [
        optimizer_window(other, module)
        for scope in scopes for other in module.direct.get(id(scope), []) if other.kind == STEP
    ]
    return found[0] if found and all(f is not None for f in found) else None


def compiled_losses(collected: Collected) -> Iterator[tuple[ast.expr, Stmt]]:
    """The values a loss function handed to `compile(loss=fn)` returns: Keras differentiates them."""
    for call, _ in compile_calls(collected):
        loss = next((kw.value for kw in call.keywords if kw.arg == "loss"), None)
        if not isinstance(loss, ast.Name):
            continue
        defined = [s for s in collected.functions.get(loss.id, []) if s.class_node is None]
        if len(defined) == 1:
            yield from defined[0].returns


# --- resets inside the window, where the window is kept by a tf.cond or an `if` on a counter -------
def _micro_step_scope(scope: Scope) -> bool:
    """A function Keras calls once per batch: a model's `train_step` or an optimizer's
    `apply_gradients` (overridden or patched in)."""
    return scope.name == keras.TRAIN_STEP or scope.name in keras.STEP_METHODS


def _gated(applied: Applied, micro: Scope) -> bool:
    """The apply runs once per window: under an `if` in the per-batch function, or in another
    function (reached through `tf.cond(..., true_fn, ...)` or a helper)."""
    if applied.stmt.scope is not micro:
        return True
    return any(isinstance(node, ast.If) for node, _ in applied.stmt.path)


def window_resets(facts: ModuleFacts) -> Iterator[tuple[Accumulator, Stmt, Scope]]:
    """Accumulators set back to zero on every call of the per-batch function they are added in
    (`train_step`, a patched `apply_gradients`), outside any `if`, while their apply is held to
    once per window: each window keeps only the last batch's gradient. Functions with a window
    the loop analysis already sees (a `% k` gate in a loop) are left to it."""
    windowed = {id(sf.scope) for sf in facts.scopes if sf.windows}
    for accumulator in of_module(facts):
        micro_scopes = {id(a.stmt.scope): a.stmt.scope for a in accumulator.added if _micro_step_scope(a.stmt.scope)}
        for scope in micro_scopes.values():
            if id(scope) in windowed or not accumulator.applied:
                continue
            if not all(_gated(applied, scope) for applied in accumulator.applied):
                continue
            for stmt, _ in accumulator.resets:
                if stmt.scope is scope and not any(isinstance(node, (ast.If, *FOR_LOOPS, ast.While)) for node, _ in stmt.path):
                    yield accumulator, stmt, scope


# --- accumulators never set back to zero -------------------------------------------------------
_HARMLESS_CALLS = frozenset({"zip", "enumerate", "len", "range", "list", "tuple", "print", "isinstance"})


def _negative(expr: ast.expr) -> bool:
    """`-g`, `-1 * g`: an addition that takes something back out."""
    for node in walk(expr):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and node.value < 0:
            return True
    return False


def never_reset(facts: ModuleFacts) -> Iterator[tuple[Accumulator, Applied]]:
    """Accumulators that are added to and applied, and that nothing in sight ever sets back to
    zero, rescales, takes from, re-creates or hands to another function: each apply sends the sum
    of every gradient since the start of training."""
    for accumulator in of_module(facts):
        if not accumulator.added or not accumulator.applied or accumulator.resets or accumulator.rescaled:
            continue
        if any(_negative(a.value) for a in accumulator.added):
            continue
        if _touched_elsewhere(accumulator):
            continue
        for applied in accumulator.applied:
            yield accumulator, applied


def _touched_elsewhere(accumulator: Accumulator) -> bool:
    name = accumulator.name
    applied = {id(a.call) for a in accumulator.applied}
    added = {id(a.call) for a in accumulator.added if a.call is not None}
    list_adds = {id(a.stmt) for a in accumulator.added if a.call is None}
    for scope in accumulator.scopes:
        definitions = [d for d in scope.definitions(name) if id(d.stmt) not in list_adds]
        if len(definitions) > 1 or any(d.stmt.loops for d in definitions):
            return True  # re-created, or rebound in a loop
        for site in scope.calls:
            call = site.call
            if id(call) in applied or id(call) in added:
                continue
            receiver, method = method_of(call)
            taken_back = method == keras.ADD_METHOD and call.args and _negative(call.args[0])
            if receiver is not None and (method in {keras.ASSIGN_METHOD, "assign_sub", "clear", "pop"} or taken_back):
                owner = _collection_of(receiver, site.stmt)
                if owner == name or dotted(receiver) == name:
                    return True
            if last_part(dotted(call.func)) in _HARMLESS_CALLS:
                continue
            if any(name in names_in(arg) for arg in (*call.args, *(kw.value for kw in call.keywords))):
                return True  # handed to a function that may reset it
    return False
