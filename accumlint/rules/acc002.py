"""ACC002 loss-kept-with-graph: an accumulator that outlives the window keeps each step's graph."""

from __future__ import annotations

from typing import Iterator, Optional

import ast

from accumlint.analysis import ModuleFacts
from accumlint.analysis.ancestry import backward_ancestry
from accumlint.analysis.calls import Callee, bound_arguments
from accumlint.analysis.collect import Loop, Scope, Stmt
from accumlint.analysis.events import BACKWARD, STEP, Event
from accumlint.analysis.dataflow import choices, reaching
from accumlint.analysis.exprs import class_like, dotted, keyword, last_part, method_of, names_in, subscript_holder, walk
from accumlint.analysis import lifetimes
from accumlint.analysis.values import CONTAINER, NUMBER, TENSOR, TENSORS, UNKNOWN, ValueKinds
from accumlint.model import Fix, Origin, TextEdit, Violation
from accumlint.rules.common import pytest_function
from accumlint.rules.edits import detached, replace
from accumlint.rules.meta import FixSafety

CODE = "ACC002"
NAME = "loss-kept-with-graph"
SUMMARY = "a running total or list keeps every step's autograd graph alive"
FIX: FixSafety = "sometimes"
_COLLECTING = {"append", "add_", "extend", "insert"}
_CONTAINERS = (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _stored_by_index(stmt: Stmt) -> bool:
    node = stmt.node
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)


def _old_value_in(term: ast.expr, name: str) -> bool:
    """`A`, or `A` scaled (`m * A`, `A * m`, `A / d`): the old value of `A` carried into its new
    one, as in a moving average `A = m * A + (1 - m) * E`, which chains every E as a sum does."""
    if dotted(term) == name:
        return True
    if isinstance(term, ast.BinOp) and isinstance(term.op, (ast.Mult, ast.Div)):
        return dotted(term.left) == name or isinstance(term.op, ast.Mult) and dotted(term.right) == name
    return False


def _accumulations(scope: Scope, keep) -> Iterator[tuple[str, ast.expr, Stmt]]:
    """(accumulator, added value, statement) for `A += E`, `A = A + E` (`A = m * A + c * E` too),
    `A.append(E)`, `A[i] = E`, `A[k] += E` in the statements `keep` selects."""
    for name, definitions in scope.defs.items():
        for definition in definitions:
            if not keep(definition.stmt) or definition.value is None:
                continue
            if definition.kind == "aug" and definition.op in {"AddAssign", "SubtractAssign"}:
                yield name, definition.value, definition.stmt
            elif definition.kind == "assign":
                value = definition.value
                if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
                    if _old_value_in(value.left, name):
                        yield name, value.right, definition.stmt
                    elif _old_value_in(value.right, name):
                        yield name, value.left, definition.stmt
                else:
                    # `preds = out if preds is None else torch.cat((preds, out))`: either branch
                    branches = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                    for part in (p for branch in branches for p in _concatenated_onto(branch, name)):
                        yield name, part, definition.stmt
    for stmt in scope.stmts:
        node = stmt.node
        if not stmt.is_statement or not keep(stmt):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            holder = subscript_holder(target)
            # `losses["d"] = d_loss` overwrites one slot every iteration: it cannot grow.
            if holder and not (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)):
                yield holder, node.value, stmt
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            holder = subscript_holder(node.target)
            if holder:
                yield holder, node.value, stmt
    for site in scope.calls:
        if not keep(site.stmt) or not isinstance(site.stmt.node, ast.Expr):
            continue
        receiver, method = method_of(site.call)
        while isinstance(receiver, ast.Subscript):  # `losses["g"].append(loss)`: the dict keeps it
            receiver = receiver.value
        holder = dotted(receiver) if receiver is not None else None
        if holder and method in _COLLECTING and site.stmt.node.value is site.call:
            value_index = 1 if method == "insert" else 0
            args = [a for a in site.call.args if not isinstance(a, ast.Starred)]
            if len(args) > value_index:
                yield holder, args[value_index], site.stmt


_CONCATENATING = {"cat", "concat", "concatenate", "vstack", "hstack", "row_stack", "column_stack"}


def _concatenated_onto(value: ast.expr, name: str) -> list[ast.expr]:
    """`preds = torch.cat((preds, out))`: the list the tensor is rebuilt from holds its old value
    and what is added to it (the parts returned)."""
    if not isinstance(value, ast.Call) or last_part(dotted(value.func) or "") not in _CONCATENATING or not value.args:
        return []
    parts = value.args[0]
    if not isinstance(parts, (ast.Tuple, ast.List)) or not any(_old_value_in(p, name) for p in parts.elts):
        return []
    return [p for p in parts.elts if not _old_value_in(p, name) and not isinstance(p, ast.Starred)]


# Calls whose result holds no graph: methods (`x.float()` keeps it; `x.int()` cannot carry one)
# and builtins.
_GRAPH_FREE_METHODS = {"item", "detach", "tolist", "numpy", "int", "bool"}
_GRAPH_FREE_BUILTINS = {"float", "int", "len", "round", "bool", "str"}


_KEEPING_REFERENCES = {"append", "extend", "insert"}
_NO_GRAD_NOTE = "`no_grad` does not detach a tensor made before it"


def _judged_at(value: ast.expr, stmt: Stmt) -> Optional[Stmt]:
    """Where a stored value's graph is judged: at the store; or, for a name kept as it is under
    `no_grad` (`losses.append(loss)`, `log[i] = loss`), at the `with` that turned autograd off,
    since only what is computed inside it is graph-free and the name still holds the tensor made
    before it. None when the store keeps nothing made with autograd on (`total += loss` under
    `no_grad` makes a new tensor without a graph)."""
    if not stmt.no_grad:
        return stmt
    node = stmt.node
    name = dotted(value)
    if name is None:
        return None
    by_reference = (
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
        and method_of(node.value)[1] in _KEEPING_REFERENCES and any(a is value for a in node.value.args)
    ) or (isinstance(node, ast.Assign) and node.value is value)
    opener = stmt.grad_turned_off_at() if by_reference else None
    if opener is None:
        return None
    base, updates = reaching(name, stmt.scope, stmt.order, stmt)
    if base is None or base.order > opener.order or any(u.order > opener.order for u in updates):
        return None  # bound again under no_grad: a new value
    return opener


def _reads_parameter(expr: ast.expr, param: str) -> bool:
    """`param` is read other than through `.item()`, `.detach()`, `float()`, `.data`, `.shape`, or
    a field of it (`stat.loss`: what an object's field holds is not shown by the object)."""
    pending: list[ast.AST] = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Call):
            receiver, method = method_of(node)
            if method in (_GRAPH_FREE_METHODS if receiver is not None else _GRAPH_FREE_BUILTINS):
                continue
            if isinstance(receiver, ast.Name) and receiver.id == param:
                return True  # `val.float()`: a method of the value, which keeps its graph
        if isinstance(node, ast.Attribute) and (node.attr in {"data", "shape"} or (
            isinstance(node.value, ast.Name) and node.value.id == param
        )):
            continue
        if isinstance(node, ast.Name) and node.id == param:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _detached_before(method: Scope, param: str, stmt: Stmt) -> bool:
    """`if isinstance(val, torch.Tensor): val = val.detach().clone()` (or `val = val.item()`, also
    with no `if`, or as the `elif` after a test for numbers) before the store: every tensor that
    reaches the store was detached, and what the tests let through untouched is no tensor. Also a
    store on a branch only numbers take (`if not isinstance(val, torch.Tensor): self.sum += val`)."""
    if _numbers_only(stmt, param):
        return True
    for definition in method.definitions(param):
        if definition.kind != "assign" or definition.order >= stmt.order or definition.value is None:
            continue
        if _reads_parameter(definition.value, param) or param not in names_in(definition.value):
            continue  # not a detached copy of the value handed in
        if all(isinstance(node, ast.If) and _tensor_kind(node.test, param) == (branch == "body")
               for node, branch in definition.stmt.path):
            return True  # every `if` around the detach lets only tensors in (or only numbers past it)
    return False


def _numbers_only(stmt: Stmt, param: str) -> bool:
    """The statement sits on a branch that a tensor never takes: the body of `if not
    isinstance(val, torch.Tensor):` or of `if isinstance(val, (int, float)):`, the `else` of a
    test for a tensor."""
    return any(isinstance(node, ast.If) and _tensor_kind(node.test, param) is (branch != "body") for node, branch in stmt.path)


def _tensor_kind(test: ast.expr, param: str) -> Optional[bool]:
    """What a type test of `param` lets into its body: True for tensors (`isinstance(val,
    torch.Tensor)`, `torch.is_tensor(val)`), False for other types only (`isinstance(val, (int,
    float))`, `not isinstance(val, torch.Tensor)`), None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _tensor_kind(test.operand, param)
        return None if inner is None else not inner
    if not isinstance(test, ast.Call) or not test.args or dotted(test.args[0]) != param:
        return None
    func = dotted(test.func) or ""
    if func == "isinstance" and len(test.args) == 2:
        kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        return any(last_part(dotted(kind)) == "Tensor" for kind in kinds)
    return True if last_part(func) == "is_tensor" else None


def _kept_parameters(facts: ModuleFacts, method: Scope) -> dict[str, str]:
    """The parameters a method keeps on its object across calls (`self.sum += val * n`,
    `self.preds.append(pred)` with no reset in the method): parameter -> attribute."""
    memo: dict[int, dict[str, str]] = facts.cached("acc002_kept_parameters", dict)
    if id(method) in memo:
        return memo[id(method)]
    kept: dict[str, str] = {}
    params = [p for p in method.params[1:]]
    for holder, value, stmt in _accumulations(method, lambda s: True):
        if _judged_at(value, stmt) is None or _slot_rewritten_each_call(stmt):
            continue
        if not lifetimes.own_attribute(holder) or next(lifetimes.resets(method, holder), None) is not None:
            continue
        for param in params:
            if param not in kept and _reads_parameter(value, param) and not _detached_before(method, param, stmt):
                kept[param] = holder
    memo[id(method)] = kept
    return kept


def _slot_rewritten_each_call(stmt: Stmt) -> bool:
    """`self.losses["GAN_" + name] = loss` inside `for name in self.heads:` of the method: the
    slots are the same on every call and each call writes them anew, so the dict cannot grow. Not
    keys from the batch (`for idx in batch_ids:`), which change from call to call."""
    node = stmt.node
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript)):
        return False
    keys = names_in(node.targets[0].slice)
    targets = {
        target for loop in stmt.loops if not loop.implicit and _fixed_collection(loop.iter_expr)
        for target in loop.targets
    }
    return bool(keys) and keys <= targets


def _fixed_collection(iterable: Optional[ast.expr]) -> bool:
    """What a method walks the same way on every call: a setting on the object (`self.heads`, its
    `.keys()`/`.items()`), a literal list or tuple, or `range` of numbers or settings."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr in {"keys", "items", "values"}:
        iterable = iterable.func.value
    if isinstance(iterable, (ast.List, ast.Tuple)):
        return all(isinstance(element, ast.Constant) for element in iterable.elts)
    if isinstance(iterable, ast.Call) and dotted(iterable.func) == "range":
        return all(isinstance(arg, ast.Constant) or _setting(arg) for arg in iterable.args)
    return iterable is not None and _setting(iterable)


def _setting(value: ast.expr) -> bool:
    """An attribute of the object (`self.heads`, `self.cfg.num_scales`), the same on every call."""
    name = dotted(value)
    return name is not None and name.startswith("self.")


def _meter_stores(facts: ModuleFacts, scope: Scope, keep) -> Iterator[tuple[str, ast.expr, Stmt, str]]:
    """`meter.update(loss, n)` on an object built here from a class of the project whose method keeps
    that argument on the object: (the object, the argument, the statement, `Meter.update` / attribute)."""
    for site in scope.calls:
        node = site.stmt.node
        if not keep(site.stmt) or not isinstance(node, ast.Expr) or node.value is not site.call:
            continue
        func = site.call.func
        if not isinstance(func, ast.Attribute):
            continue
        holder: Optional[str]
        if isinstance(func.value, ast.Subscript) and isinstance(func.value.value, ast.Name):
            holder = func.value.value.id  # `meters["loss"].update(loss)`, `meters = defaultdict(AverageMeter)`
            callee = _meter_in_dict(facts, holder, func.attr, site.stmt)
        else:
            holder = dotted(func.value)
            if holder is None or not (isinstance(func.value, ast.Name) or lifetimes.own_attribute(holder)):
                continue  # `meter.update(...)`, or `self.losses.update(...)` on the trainer's own meter
            callee = facts.flow.resolver.resolve(site.call, site.stmt.scope) or facts.flow.instance_method(site.call, site.stmt)
        callees = [callee] if callee is not None else _chosen_meters(facts, holder, func.attr, site.stmt)
        seen: set[int] = set()
        for method in callees:
            for arg, kept_in in _kept_arguments_of_call(facts, site.call, method):
                if id(arg) not in seen:
                    seen.add(id(arg))
                    yield holder, arg, site.stmt, kept_in


def _kept_arguments_of_call(facts: ModuleFacts, call: ast.Call, callee: Callee) -> Iterator[tuple[ast.expr, str]]:
    """The arguments of `call` that the method `callee` keeps on its object, with what says so."""
    if not callee.scope.params or callee.scope.params[0] != "self":
        return
    kept = _kept_parameters(facts, callee.scope)
    params = callee.scope.params[1:]
    cls = callee.scope.class_node.name if callee.scope.class_node is not None else ""
    method = callee.scope.name
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if index < len(params) and params[index] in kept:
            yield arg, f"`{cls}.{method}` keeps it in `{kept[params[index]]}`"
    for kw in call.keywords:
        if kw.arg in kept:
            yield kw.value, f"`{cls}.{method}` keeps it in `{kept[kw.arg]}`"


def _chosen_meters(facts: ModuleFacts, holder: Optional[str], method: str, at: Stmt) -> list[Callee]:
    """`losses = DistributedMetric() if distributed else AverageMeter()`: the `method` of each
    project class among the choices (a choice that keeps its argument leaks on that branch,
    whatever the other does)."""
    built = _built_choices(holder, at) if holder is not None and "." not in holder else []
    if len(built) < 2:
        return []  # one call alone was already resolved
    found = []
    for choice in built:
        cls = dotted(choice.func)
        callee = facts.flow.class_method(cls, method, at.scope) if cls is not None and class_like(cls) else None
        if callee is not None:
            found.append(callee)
    return found


def _meter_class(built: Optional[ast.Call]) -> Optional[str]:
    """The class a dict of meters makes its values with: `defaultdict(AverageMeter)`."""
    if built is None or last_part(dotted(built.func)) != "defaultdict" or len(built.args) != 1:
        return None
    name = dotted(built.args[0])
    return name if class_like(name) else None


def _meter_in_dict(facts: ModuleFacts, holder: str, method: str, at: Stmt) -> Optional[Callee]:
    """The method a value of the dict `holder` runs, when the dict makes them with a class of the
    project (`defaultdict(AverageMeter)`)."""
    cls = _meter_class(_built_as(holder, at))
    if cls is None:
        return None
    return facts.flow.class_method(cls, method, at.scope)


def _kept_arguments(facts: ModuleFacts, function: Scope) -> list[tuple[str, str, Stmt]]:
    """A function that stores one of its arguments into another (`def record(store, value):
    store.append(value)`, `totals[name] += value`), with no reset of the store inside it:
    (store parameter, value parameter, the store statement)."""
    memo: dict[int, list[tuple[str, str, Stmt]]] = facts.cached("acc002_kept_arguments", dict)
    if id(function) in memo:
        return memo[id(function)]
    kept: list[tuple[str, str, Stmt]] = []
    params = list(function.params)
    # what it computes under `torch.no_grad()` carries no graph, whatever it was handed
    for holder, value, stmt in _accumulations(function, lambda s: True):
        if _judged_at(value, stmt) is None:
            continue
        if holder not in params or next(lifetimes.resets(function, holder), None) is not None:
            continue
        for param in params:
            if param != holder and _reads_parameter(value, param):
                kept.append((holder, param, stmt))
                break
    memo[id(function)] = kept
    return kept


def _helper_stores(facts: ModuleFacts, scope: Scope, keep) -> Iterator[tuple[str, ast.expr, Stmt, str]]:
    """`record(losses, loss)` where the project's function `record` appends its second argument to
    its first: a store into the caller's `losses`, made at the call (where `.detach()` belongs)."""
    for site in scope.calls:
        node = site.stmt.node
        if not keep(site.stmt) or not isinstance(node, ast.Expr) or node.value is not site.call:
            continue
        if any(isinstance(a, ast.Starred) for a in site.call.args):
            continue
        callee = facts.analysed.resolver.resolve(site.call, scope)
        if callee is None or callee.scope is scope or callee.scope.class_node is not None:
            continue  # a function (`record(...)`, `utils.record(...)`), not a method: no `self` to skip
        kept = _kept_arguments(facts, callee.scope)
        if not kept:
            continue
        bound = dict(zip(callee.scope.params, site.call.args))
        bound.update({kw.arg: kw.value for kw in site.call.keywords if kw.arg is not None})
        for holder, param, stmt in kept:
            store, value = dotted(bound.get(holder)), bound.get(param)
            if store is None or value is None:
                continue
            where = "" if callee.module is facts.analysed else f" of `{callee.module.path.name if callee.module.path else '?'}`"
            line = getattr(stmt.node, "lineno", "?")
            yield store, value, site.stmt, f"`{callee.scope.name}()` keeps it in `{holder}`, line {line}{where}"


_INTEGER_DTYPES = frozenset({
    "int", "int8", "int16", "int32", "int64", "long", "short", "uint8", "bool", "int_",
})


def _built_as(name: str, stmt: Stmt) -> Optional[ast.Call]:
    """The call that built `name` where `stmt` reads it (`losses = ExtraInfo()`,
    `counts = torch.zeros(n, dtype=torch.long)`), if the definition in sight is one."""
    base, _ = reaching(name, stmt.scope, stmt.order)
    if base is None or base.kind != "assign" or not isinstance(base.value, ast.Call):
        return None
    return base.value


def _built_choices(name: str, stmt: Stmt) -> list[ast.Call]:
    """The calls that built `name` where `stmt` reads it: the one call, or each choice of
    `A() if cond else B()` (nested ones too); empty when anything else made it."""
    built = _built_as(name, stmt)
    if built is not None:
        return [built]
    base, _ = reaching(name, stmt.scope, stmt.order)
    if base is None or base.kind != "assign" or not isinstance(base.value, ast.IfExp):
        return []
    options = choices(base.value)
    return [c for c in options if isinstance(c, ast.Call)] if all(isinstance(c, ast.Call) for c in options) else []


def _cannot_keep_a_graph(name: str, stmt: Stmt) -> bool:
    """`counts.append(x)` on an object of a class (`ExtraInfo()`: what its `append` keeps is that
    class's business, read by the meter pass when the class is the project's), and `counts += x` in
    place on a tensor built with an integer or boolean dtype, which cannot require grad."""
    built = _built_as(name, stmt)
    if built is None:
        return False
    node = stmt.node
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        receiver, method = method_of(node.value)
        built_by = last_part(dotted(built.func))
        collects = receiver is not None and method in _COLLECTING and dotted(receiver) == name
        return collects and (built_by[:1].isupper() or _bounded_queue(built))
    if isinstance(node, ast.AugAssign) and dotted(node.target) == name:
        for keyword in built.keywords:
            if keyword.arg == "dtype" and last_part(dotted(keyword.value)) in _INTEGER_DTYPES:
                return True
    return False


def _argument_kept(facts: ModuleFacts) -> lifetimes.ArgumentKept:
    """Whether a call of a project function keeps the argument `arg` past the call: a method that
    stores it on its object (`self.history.append(y_hats)`), or a function that stores it into
    another argument (`record(store, value)`)."""
    def keeps(call: ast.Call, scope: Scope, arg: ast.expr) -> bool:
        callee = facts.analysed.resolver.resolve(call, scope)
        if callee is None:
            return False
        if any(kept is arg for kept, _ in _kept_arguments_of_call(facts, call, callee)):
            return True
        bound = bound_arguments(call, callee) or {}
        return any(bound.get(value) is arg for _, value, _ in _kept_arguments(facts, callee.scope))

    return keeps


def _bounded_queue(built: ast.Call) -> bool:
    """`deque(maxlen=n)` (or `deque(items, n)`): it keeps its last n items, so what it holds cannot
    grow with the run (`maxlen=None` is unbounded)."""
    if last_part(dotted(built.func)) != "deque":
        return False
    size = keyword(built, "maxlen") if len(built.args) < 2 else built.args[1]
    return size is not None and not (isinstance(size, ast.Constant) and size.value is None)


def _stores(facts: ModuleFacts, scope: Scope, keep) -> Iterator[tuple[str, ast.expr, Stmt, str]]:
    for name, value, stmt in _accumulations(scope, keep):
        if not _cannot_keep_a_graph(name, stmt):
            yield name, value, stmt, ""
    yield from _meter_stores(facts, scope, keep)
    yield from _helper_stores(facts, scope, keep)


def _callers(facts: ModuleFacts, scope: Scope):
    return facts.calls_named(scope.name)


def _derived_names(scope: Scope, value: ast.expr, at: Stmt) -> set[str]:
    """The names a returned value is computed from, through the local definitions it reads
    (`logps = torch.cat(all_logps); return logps` reads `all_logps`)."""
    found: set[str] = set()
    pending = [(n, at.order) for n in names_in(value)]
    while pending and len(found) < 500:
        name, before = pending.pop()
        if name in found:
            continue
        found.add(name)
        for definition in scope.definitions(name):
            if definition.order < before and definition.value is not None and definition.kind in {"assign", "unpack", "aug", "for"}:
                pending.extend((n, definition.order) for n in names_in(definition.value))
        for site in scope.calls:  # `outs.append(loss)`: the list is made of what it was given
            receiver, method = method_of(site.call)
            if method in {"append", "insert"} and receiver is not None and dotted(receiver) == name and site.stmt.order < before:
                pending.extend((n, site.stmt.order) for arg in site.call.args[-1:] for n in names_in(arg))
    return found


def _scalar(expr: ast.expr) -> bool:
    """A plain number by construction: `x.item()`, `float(x)`, arithmetic on those."""
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.BinOp):
        return _scalar(expr.left) and _scalar(expr.right)
    if isinstance(expr, ast.Call):
        receiver, method = method_of(expr)
        if receiver is not None and method in {"item", "tolist"}:
            return True
        return receiver is None and method in {"float", "int", "len", "round"}
    return False


def _returned_to_backward(scope: Scope, name: str, facts: ModuleFacts, at: Stmt) -> bool:
    """Returned (or yielded) accumulators may be backward-ed by a caller: unknown unless we see the
    callers. An object built by a class (`losses = AverageMeter()`) is no tensor to backward: only
    a caller seen to backward what it returns keeps it silent."""
    if not _handed_out(facts, scope, name):
        return False
    callers = [(site, sf.scope, sf.events) for sf, site in _callers(facts, scope)]
    if not callers:
        # `train_one_epoch(...)` called only from the training script, another module of the project
        for site, flow in facts.flow.calls_from_importers(scope):
            caller = site.stmt.scope
            callers.append((site, caller, flow.resolver.module.windows_of(caller)[0]))
    if not callers:
        built = _built_choices(name, at)
        return not built or not all(class_like(dotted(b.func)) or _meter_class(b) is not None for b in built)
    for site, caller, events in callers:
        if isinstance(site.stmt.node, ast.Expr) and site.stmt.node.value is site.call:
            continue  # `self.train(loader)` as a statement: its result is thrown away
        if _only_shown(site.call, site.stmt):
            continue  # `print(train_epoch(...))`: shown, then thrown away
        targets = {d.name for ds in caller.defs.values() for d in ds if d.stmt is site.stmt}
        if targets & backward_ancestry(caller, events) or not targets:
            return True
    return False


_SHOWING = {"print", "info", "debug", "warning", "log", "write", "set_description", "set_postfix"}


def _only_shown(call: ast.Call, stmt: Stmt) -> bool:
    """The call's result goes only into a statement that prints or logs it (`print(f(x))`,
    `logger.info(f"{f(x):.3f}")`): it is shown, never kept or differentiated."""
    node = stmt.node
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)) or node.value is call:
        return False
    outer = node.value
    if last_part(dotted(outer.func)) not in _SHOWING:
        return False
    pending = [*outer.args, *(k.value for k in outer.keywords)]
    while pending:  # the value itself, formatted or in arithmetic; not a receiver (`f(x).backward()`)
        part = pending.pop()
        if part is call:
            return True
        if isinstance(part, ast.JoinedStr):
            pending.extend(part.values)
        elif isinstance(part, ast.FormattedValue):
            pending.append(part.value)
        elif isinstance(part, ast.BinOp):
            pending.extend((part.left, part.right))
        elif isinstance(part, (ast.Tuple, ast.List)):
            pending.extend(part.elts)
    return False


def _backward_tensors(events) -> set[str]:
    return {dotted(e.tensor) or "" for e in events if e.kind == BACKWARD and e.tensor is not None} - {""}


def _value_kind(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> str:
    return ValueKinds(facts.flow, backwarded).of(value, stmt)


_FORWARD_HINTS = ("loss", "criterion", "model", "forward")


def _forward_call(call: ast.Call, models: set[str]) -> bool:
    """`model(x)`, `self.net.forward(x)`, `criterion(out, y)`, `compute_loss(...)`."""
    receiver, method = method_of(call)
    name = dotted(call.func)
    if lifetimes.is_model(name, models):
        return True
    if method in {"forward", "__call__"} and receiver is not None and lifetimes.is_model(dotted(receiver), models):
        return True
    return any(hint in (method or "").lower() for hint in _FORWARD_HINTS)


def _value_names(value: ast.expr) -> Iterator[ast.expr]:
    """The names and attribute chains the value is made of, read directly (`pred`, `out.logits`,
    the receiver of `pred.float()`), not those handed as arguments to a call (`count(batch)`)."""
    pending: list[ast.AST] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) is not None:
            yield node  # type: ignore[misc]
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                pending.append(node.func.value)
        elif isinstance(node, ast.Subscript):
            pending.append(node.value)
        elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.IfExp, ast.NamedExpr, ast.Attribute)):
            pending.extend(ast.iter_child_nodes(node))


def _output_on_the_way(facts: ModuleFacts, value: ast.expr, stmt: Stmt) -> bool:
    """The value is (made of) an output on the way to this scope's backward: a name the loss is
    computed from, bound in the function by a call (`pred = self.backbone(x)`; `loss = crit(pred, y)`),
    that the code does not show to be a number."""
    scope = stmt.scope
    sf = next((f for f in facts.scopes if f.scope is scope), None)
    if sf is None:
        return False
    ancestry = backward_ancestry(scope, sf.events)
    kinds = ValueKinds(facts.flow)
    for node in _value_names(value):
        name = dotted(node) or ""
        if name not in ancestry:
            continue
        definitions = [d for d in scope.definitions(name) if d.order < stmt.order]
        if definitions and definitions[-1].kind in {"assign", "unpack"} and isinstance(definitions[-1].value, ast.Call) \
                and kinds.of(node, stmt) != NUMBER:
            return True
    return False


def _from_forward(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> bool:
    """The value is computed from this step's forward pass or loss (not from the batch alone, a
    run option or a counter): it reads the tensor handed to backward, or a model or loss call
    made on the way to it."""
    scope = stmt.scope
    derived = _derived_names(scope, value, stmt)
    if derived & backwarded:
        return True
    if _output_on_the_way(facts, value, stmt):
        return True
    models = facts.cached("acc002_models", lambda: lifetimes.model_objects(facts))
    values = [value] + [
        d.value for n in derived for d in scope.definitions(n)
        if d.value is not None and d.order < stmt.order and d.kind in {"assign", "unpack", "aug", "for"}
    ]
    return any(isinstance(node, ast.Call) and _forward_call(node, models) for expr in values for node in walk(expr))


def _graph_value(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> bool:
    """A value that may hold this step's graph: no number (`n_total += batch.batch_size`,
    `lr * seq_len / bptt`), and either a tensor or something made by the forward pass (not a
    helper's count of the batch, `tokens += count(batch)`)."""
    kind = _value_kind(facts, value, stmt, backwarded)
    if kind == CONTAINER and isinstance(value, ast.Name) and value.id in backwarded:
        return True  # `{"loss": loss, ...}` returned by a Lightning training_step: the trainer backwards its loss
    if kind == UNKNOWN and (_made_out_of_sight(facts, value, stmt, backwarded) or _beside_the_loss(facts, value, stmt, backwarded)):
        return False
    return kind == TENSOR or (kind != NUMBER and _from_forward(facts, value, stmt, backwarded))


def _beside_the_loss(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> bool:
    """`loss, sample_size, logging_output = criterion(model, sample)`: another result of the call
    that gives the loss handed to backward, from a loss function rather than the model itself. What
    a loss function returns beside the loss (a count, a dict of logged numbers) is unknown, and
    unknown is silence; a model's own results (`logits, loss = model(x, y)`) are its outputs."""
    if not isinstance(value, ast.Name) or value.id in backwarded:
        return False
    definition, updates = reaching(value.id, stmt.scope, stmt.order, stmt)
    if definition is None or updates or definition.kind != "unpack" or not isinstance(definition.value, ast.Call):
        return False
    call = definition.value
    models = facts.cached("acc002_models", lambda: lifetimes.model_objects(facts))
    receiver, method = method_of(call)
    if lifetimes.is_model(dotted(call.func), models) or (receiver is not None and lifetimes.is_model(dotted(receiver), models)):
        return False
    siblings = {d.name for ds in stmt.scope.defs.values() for d in ds if d.stmt is definition.stmt and d.kind == "unpack"}
    return bool((siblings - {value.id}) & backwarded)


def _made_out_of_sight(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> bool:
    """`top1[0]` with `top1 = accuracy(logits, y)`: made from the outputs of another call by a
    function that is neither a model nor a loss and whose code is not in sight (another notebook
    cell, a library), and not on the way to backward: what it returns is unknown (a metric is a
    number more often than not), and unknown is silence."""
    base = value
    while isinstance(base, (ast.Subscript, ast.Attribute)):
        base = base.value
    if isinstance(base, ast.Call):
        call: Optional[ast.expr] = base
    elif isinstance(base, ast.Name) and base.id not in backwarded:
        definition, updates = reaching(base.id, stmt.scope, stmt.order, stmt)
        call = definition.value if definition is not None and not updates and definition.kind in {"assign", "unpack"} else None
    else:
        return False
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        return False
    models = facts.cached("acc002_models", lambda: lifetimes.model_objects(facts))
    if _forward_call(call, models) or facts.flow.resolver.resolve(call, stmt.scope) is not None:
        return False
    return any(_made_by_a_call(arg, stmt) for arg in call.args)


def _made_by_a_call(arg: ast.expr, stmt: Stmt) -> bool:
    """`logits` with `logits = model(x)` in sight: an output handed on (not the batch itself)."""
    if not isinstance(arg, ast.Name):
        return False
    definition, _ = reaching(arg.id, stmt.scope, stmt.order, stmt)
    return definition is not None and definition.kind in {"assign", "unpack"} and isinstance(definition.value, ast.Call)


def _detach_fix(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> Optional[Fix]:
    """`.detach()` on the whole stored value, only where the code shows a tensor: a model output of
    unknown type may be a tuple, a dict or a float, where `.detach()` would raise (no fix then);
    never on a container display."""
    if isinstance(value, _CONTAINERS) or any(isinstance(n, (ast.Lambda, ast.Await, ast.Yield)) for n in walk(value)):
        return None
    if _value_kind(facts, value, stmt, backwarded) != TENSOR:
        return None
    value_text = facts.source.segment(value)
    return Fix(f"Detach `{value_text}` before keeping it", "safe", (replace(facts.source, value, detached(facts.source, value)),))


def _torch_alias(facts: ModuleFacts) -> Optional[str]:
    for alias, origin in facts.collected.imports.items():
        if origin == "torch":
            return alias
    return None


def _no_grad_fix(facts: ModuleFacts, loop: Loop) -> Optional[Fix]:
    """`with torch.no_grad():` around the whole loop, its lines indented one level."""
    torch = _torch_alias(facts)
    node = loop.node
    src = facts.source
    if torch is None or not loop.header.is_statement or not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return None
    for inner in ast.walk(node):  # a string over several lines would change when indented
        if isinstance(inner, (ast.Constant, ast.JoinedStr)) and getattr(inner, "lineno", 0) != getattr(inner, "end_lineno", 0):
            return None
    first, last = node.lineno, node.end_lineno or node.lineno
    start = src.line_start(first)
    head = src.text[start:src.offset(first, node.col_offset)]
    if head.strip():
        return None  # `x = 1; for ...` on one line
    indent = src.indent_of(first)
    unit = "    " if "\t" not in indent else "\t"
    newline = src.newline()
    lines = [src.line(n) for n in range(first, last + 1)]
    body = newline.join(unit + line if line.strip() else line for line in lines)
    end = src.line_end(last)
    text = f"{indent}with {torch}.no_grad():{newline}{body}"
    return Fix(f"Run the loop under `{torch}.no_grad()`", "unsafe", (TextEdit(start, end, text),))


def _kept_in_training_loops(facts: ModuleFacts, sf, backward_names: set[str]) -> Iterator[Violation]:
    scope = sf.scope
    backwarded = _backward_tensors(sf.events)
    training = {id(loop) for loop in scope.loops if any(
        e.kind == BACKWARD and not e.helper and loop.contains(e.stmt) for e in sf.events
    )}
    # Loops whose backward runs in a called step function (`loss_dict = self.train_one_batch(x)`):
    # what that call returns is this iteration's loss, graph-carrying only where the code shows it.
    stepping = {id(loop): [e for e in sf.events if e.kind == BACKWARD and e.helper and loop.contains(e.stmt)]
                for loop in scope.loops if id(loop) not in training}
    # A loop whose every backward runs in a called function's own training loop runs whole
    # trainings (one per fold, task or dataset), not steps: what it keeps per run does not grow
    # with the steps.
    stepping = {key: events for key, events in stepping.items() if events and not all(_trains_a_run(e, facts) for e in events)}
    steps = [e.stmt for e in sf.events if e.kind == STEP]
    for loop in scope.loops:
        if id(loop) not in training and id(loop) not in stepping:
            continue
        if id(loop) in training:
            # What the backward of this loop runs through and each iteration makes anew (the loss, the
            # outputs, the batch): not the model, optimizer or loader a `prepare` call ties to them.
            loop_graph = {
                n for n in backward_ancestry(scope, sf.events, only=lambda e: loop.contains(e.stmt))
                if any(loop.contains(d.stmt) for d in scope.definitions(n)) and facts.roles.role(n) is None
            }
        else:
            calls = {id(e.stmt) for e in stepping[id(loop)]}
            loop_graph = {d.name for ds in scope.defs.values() for d in ds if id(d.stmt) in calls}
        for name, value, stmt, via in _stores(facts, scope, loop.contains):
            if id([l for l in stmt.loops if id(l) in training or id(l) in stepping][-1]) != id(loop):
                continue  # reported for the innermost loop with a backward that holds it
            at = _judged_at(value, stmt)
            if at is None:
                continue
            if loop.implicit and lifetimes.own_attribute(name):
                continue  # a `self` attribute across hook calls: reported by the attribute pass
            if name in backward_names or not lifetimes.outlives(scope, name, loop):
                continue
            if lifetimes.lives_one_window(scope, name, loop, steps) or lifetimes.lives_one_batch(scope, name, loop, facts):
                continue
            if lifetimes.lives_one_call(scope, name, loop, steps, facts, _argument_kept(facts)):
                continue
            if lifetimes.consumed(scope, name, facts.collected.scopes):
                continue
            if not (_derived_names(scope, value, at) & loop_graph) or not facts.flow.carries_graph(value, at):
                continue
            if _stored_by_index(stmt) and not (_derived_names(scope, value, at) & (loop_graph - set(loop.targets))):
                continue  # `lengths[i] = length_fn(batch)`: made from the batch alone, not from the forward pass
            if _returned_to_backward(scope, name, facts, stmt):
                continue
            if id(loop) in stepping:
                # what a step function returns is judged on its kind alone: unknown is silence
                kind = _value_kind(facts, value, at, backwarded)
                if kind not in {TENSOR, TENSORS, CONTAINER} and not ValueKinds(facts.flow).iterates_a_tensor(value, at):
                    continue
            elif not _graph_value(facts, value, at, backwarded):
                continue
            yield _kept_every_iteration(facts, name, value, stmt, via, backwarded, at)


def _trains_a_run(event: Event, facts: ModuleFacts) -> bool:
    """The called function runs a training loop of its own: a loop over data whose body runs a
    backward and an optimizer step (not a WGAN step's `for _ in range(n_critic):`, whose caller's
    loop is still the loop of steps)."""
    callee = event.callee
    if callee is None:
        return False
    events = callee.module.direct.get(id(callee.scope), [])
    return any(
        any(e.kind == BACKWARD and loop.contains(e.stmt) for e in events)
        and any(e.kind == STEP and loop.contains(e.stmt) for e in events)
        and lifetimes.over_data(loop, facts)
        for loop in callee.scope.loops if not loop.implicit  # a step method's own body is one step
    )


def _kept_every_iteration(
    facts: ModuleFacts, name: str, value: ast.expr, stmt: Stmt, via: str, backwarded: set[str], at: Stmt
) -> Violation:
    """`name` keeps `value`'s graph from every iteration: the finding at `stmt`, with `.detach()` as
    its fix; the value's kind is read at `at` (before a `no_grad` block it is kept under)."""
    notes = [via] if via else []
    if at is not stmt:
        notes.insert(0, _NO_GRAD_NOTE)
    return Violation(
        CODE,
        f"`{name}` keeps the autograd graph of `{facts.source.segment(value)}` from every iteration alive"
        f"{' (' + '; '.join(notes) + ')' if notes else ''}: {_detach_advice(facts, value, at, backwarded)}",
        stmt.node,
        _detach_fix(facts, value, at, backwarded),
    )


def _detach_advice(facts: ModuleFacts, value: ast.expr, stmt: Stmt, backwarded: set[str]) -> str:
    """What the message asks for: `.detach()` on a tensor; on each tensor a container holds."""
    kind = _value_kind(facts, value, stmt, backwarded)
    if kind == TENSOR:
        return f"add `{detached(facts.source, value)}` (or `.item()`)"
    if kind == CONTAINER:
        return "detach the tensors it holds before keeping it (`.detach()` or `.item()` on each)"
    # of a type the code does not show: it may be a dict or tuple of outputs, with no `.detach()` of its own
    return f"detach it before keeping it (`{detached(facts.source, value)}`, on each tensor if it holds several, or `.item()`)"


def _kept_in_evaluation_loops(facts: ModuleFacts, sf, backward_names: set[str], models: set[str]) -> Iterator[Violation]:
    """A loop that never calls backward (nor steps) and runs with autograd on, keeping model outputs."""
    scope = sf.scope
    if scope.no_grad or lifetimes.called_without_grad(facts, scope):
        return
    trained = {id(loop) for loop in scope.loops if any(
        e.kind in {BACKWARD, STEP} and loop.contains(e.stmt) for e in sf.events
    )}
    for loop in scope.loops:
        if loop.implicit or loop.header.no_grad or id(loop) in trained:
            continue
        if loop.parent is not None and id(loop.parent) not in trained:
            continue  # the outermost loop that never calls backward holds the finding
        if _in_project_no_grad_context(facts, loop):
            continue
        if not any(lifetimes.over_data(inner, facts) for inner in scope.loops if inner is loop or loop.contains(inner.header)):
            continue  # tiles, prompts, time steps: a model's own loop, whose caller picks the grad mode
        kept: list[tuple[str, ast.expr, Stmt, str]] = []
        for name, value, stmt, via in _stores(facts, scope, loop.contains):
            if name in backward_names or not lifetimes.outlives(scope, name, loop):
                continue
            if not facts.flow.carries_graph(value, stmt) or not lifetimes.forward_in(value, stmt, models, loop):
                continue
            kind = _value_kind(facts, value, stmt, set())
            if kind == NUMBER:
                continue  # a metric the project's functions turn into a number (`float(...)`)
            if kind == UNKNOWN and _made_out_of_sight(facts, value, stmt, set()):
                continue  # a metric computed from the outputs by a function out of sight
            if _handed_out(facts, scope, name):
                continue  # handed to the caller, who may backward it or run this under no_grad
            if lifetimes.consumed(scope, name, facts.collected.scopes):
                continue  # a pipeline's forward queue, popped by the backward passes that follow
            kept.append((name, value, stmt, via))
        if not kept:
            yield from _carried_in_evaluation_loop(facts, sf, loop, models)
            continue
        names = ", ".join(dict.fromkeys(f"`{n}`" for n, _, _, _ in kept))
        name, value, stmt, via = min(kept, key=lambda k: k[2].order)
        stored = f" ({via})" if via else ""
        if _takes_gradients(facts, scope, loop):
            # `torch.autograd.grad(..., create_graph=True)` in the loop: no_grad would break it.
            yield _kept_every_iteration(facts, name, value, stmt, via, _backward_tensors(sf.events), stmt)
            continue
        yield Violation(
            CODE,
            f"{names} keeps the autograd graph of every batch alive{stored}: this loop never calls backward "
            f"but runs with autograd on, so every batch's activations stay in memory: run it under "
            f"`torch.no_grad()`",
            stmt.node,
            _no_grad_fix(facts, loop),
        )


def _in_project_no_grad_context(facts: ModuleFacts, loop: Loop) -> bool:
    """The loop runs inside `with eval_mode(model, no_grad=True):`, a project context manager
    that turns autograd off on entry."""
    return any(
        isinstance(item.context_expr, ast.Call) and facts.analysed.resolver.enters_no_grad(item.context_expr)
        for node, _ in loop.header.path if isinstance(node, (ast.With, ast.AsyncWith)) for item in node.items
    )


def _carried_in_evaluation_loop(facts: ModuleFacts, sf, loop: Loop, models: set[str]) -> Iterator[Violation]:
    """`output, hidden = model(data, hidden)` in a loop that never calls backward and runs with
    autograd on: the state handed back into the next forward chains every batch's graph onto the
    last, so the memory grows with each batch. Only where the function runs no backward at all and
    hands back nothing but numbers (a REINFORCE rollout that backwards after the loop keeps its
    graph on purpose), and the state is set before the loop and rebound in it only by that call."""
    scope = sf.scope
    if any(e.kind == BACKWARD for e in sf.events) or _takes_gradients(facts, scope, loop):
        return
    if any(_value_kind(facts, value, stmt, set()) != NUMBER for value, stmt in scope.returns):
        return
    for name, definitions in scope.defs.items():
        if "." in name:
            continue
        inside = [d for d in definitions if loop.contains(d.stmt)]
        if len(inside) != 1 or not any(not loop.contains(d.stmt) and d.order < loop.header.order for d in definitions):
            continue
        carried = inside[0]
        call = carried.value
        if carried.kind not in {"assign", "unpack"} or not isinstance(call, ast.Call) or carried.stmt.no_grad:
            continue
        if not lifetimes.is_model(dotted(call.func), models):
            continue  # the model's own call, not a criterion or a helper
        if not any(name in names_in(arg) for arg in (*call.args, *(kw.value for kw in call.keywords))):
            continue
        yield Violation(
            CODE,
            f"`{name}` carries the autograd graph of every batch into the next one: this loop never calls "
            f"backward but runs with autograd on, and each forward takes the `{name}` the last one made, so "
            f"the graphs chain and memory grows with every batch: run it under `torch.no_grad()`",
            carried.stmt.node,
            _no_grad_fix(facts, loop),
        )
        return


def _handed_out(facts: ModuleFacts, scope: Scope, name: str) -> bool:
    """A returned value (an element of a returned tuple) made from `name` that is no number:
    the caller may backward it or run the function under no_grad."""
    for value, stmt in scope.returns:
        for element in value.elts if isinstance(value, ast.Tuple) else [value]:
            if name not in _derived_names(scope, element, stmt) or _scalar(element):
                continue
            if _value_kind(facts, element, stmt, set()) != NUMBER:
                return True
    return False


def _takes_gradients(facts: ModuleFacts, scope: Scope, loop: Loop) -> bool:
    """The loop calls `torch.autograd.grad` (a gradient penalty, a higher-order derivative), by any
    import name (`from torch.autograd import grad`)."""
    imports = facts.collected.imports
    for site in scope.calls:
        name = dotted(site.call.func) or ""
        head, dot, rest = name.partition(".")
        full = f"{imports[head]}{dot}{rest}" if head in imports else name
        if loop.contains(site.stmt) and full == "torch.autograd.grad":
            return True
    return False


def _training_method(scope: Scope, events) -> bool:
    if scope.name in lifetimes.NO_GRAD_HOOKS or scope.no_grad:
        return False
    if any(e.kind == BACKWARD for e in events) or scope.is_lightning_training_step:
        return True
    lowered = scope.name.lower()
    return "train" in lowered and not any(w in lowered for w in ("eval", "valid", "test", "predict", "infer"))


def _kept_on_self(facts: ModuleFacts, sf, by_scope: dict) -> Iterator[Violation]:
    """`self.history.append(loss)` in a training method: the list lives on the object across calls."""
    scope = sf.scope
    if scope.class_node is None or not _training_method(scope, sf.events):
        return
    if lifetimes.called_without_grad(facts, scope):
        return
    methods = lifetimes.class_methods(facts, scope)
    backwarded = _backward_tensors(sf.events)
    outside_loops = lambda s: all(loop.implicit for loop in s.loops)  # noqa: E731
    stores = [(name, value, stmt, "") for name, value, stmt in _accumulations(scope, outside_loops)]
    stores += list(_meter_stores(facts, scope, outside_loops))  # `self.losses.update(loss)`
    for name, value, stmt, via in stores:
        if not lifetimes.own_attribute(name) or not facts.flow.carries_graph(value, stmt):
            continue
        if next(lifetimes.resets(scope, name), None) is not None:
            continue  # started anew on every call
        graph_held = False
        for method in methods:
            method_facts = by_scope.get(id(method))
            if method_facts is None:
                continue
            if name in backward_ancestry(method, method_facts.events) or any(
                e.kind == BACKWARD and e.tensor is not None and name in _derived_names(method, e.tensor, e.stmt)
                for e in method_facts.events
            ):
                graph_held = True  # backward-ed later (a deferred loss)
            if any(name in names_in(v) for v, _ in method.returns):
                graph_held = True  # handed out by a getter: its use is not in sight
            if method is not scope and any(e.kind == STEP for e in method_facts.events) and next(
                lifetimes.resets(method, name), None
            ) is not None:
                graph_held = True  # reset with every optimizer step: it cannot grow
        if graph_held or not _graph_value(facts, value, stmt, backwarded):
            continue
        yield Violation(
            CODE,
            f"`{name}` lives on the object across calls of `{scope.name}` and keeps the autograd graph of "
            f"`{facts.source.segment(value)}` from every call alive{f' ({via})' if via else ''}: "
            f"{_detach_advice(facts, value, stmt, backwarded)}",
            stmt.node,
            _detach_fix(facts, value, stmt, backwarded),
        )


def check(facts: ModuleFacts) -> Iterator[Violation]:
    models: Optional[set[str]] = None
    by_scope = {id(sf.scope): sf for sf in facts.scopes}
    for sf in facts.scopes:
        scope = sf.scope
        if not scope.loops and scope.class_node is None:
            continue
        if _gradient_check(sf, facts):
            continue
        backward_names = backward_ancestry(scope, sf.events)
        yield from _kept_in_training_loops(facts, sf, backward_names)
        if scope.loops:
            if models is None:
                models = lifetimes.model_objects(facts)
            yield from _kept_in_evaluation_loops(facts, sf, backward_names, models)
        yield from _kept_on_self(facts, sf, by_scope)
        yield from _kept_by_called_methods(facts, sf)
        if scope.loops:
            yield from _kept_in_handed_containers(facts, sf, backward_names)


def _gradient_check(sf, facts: ModuleFacts) -> bool:
    """A test that runs backward over a few cases and never steps an optimizer (a kernel's
    gradients against a reference, its outputs compared after the loop): no training run, and
    what it keeps lives as long as the test. An evaluation script named `test_*.py` runs no
    backward, and keeps its findings."""
    kinds = {e.kind for e in sf.events}
    return BACKWARD in kinds and STEP not in kinds and pytest_function(sf.scope, facts.analysed.path)


def _kept_by_called_methods(facts: ModuleFacts, sf) -> Iterator[Violation]:
    """`self._record(loss)` in a training loop, where `_record` keeps its argument on the object
    (`self.history.append(value)`, `self.total += value`): reported at that store, in whichever
    module the method is, with the call that hands it the graph. No fix: the method's parameter may
    take numbers from other callers; the caller passes `.detach()` or `.item()`."""
    scope = sf.scope
    for loop in scope.loops:
        if not any(e.kind == BACKWARD and loop.contains(e.stmt) for e in sf.events):
            continue
        backwarded = _backward_tensors(sf.events)
        for site in scope.calls:
            func = site.call.func
            if not loop.contains(site.stmt) or not (isinstance(func, ast.Attribute) and dotted(func.value) == "self"):
                continue
            callee = facts.analysed.resolver.resolve(site.call, scope)
            if callee is None or callee.scope is scope or callee.scope.class_node is None:
                continue
            method = callee.scope
            if not method.params or method.params[0] != "self" or method.no_grad:
                continue
            kept = _kept_parameters(facts, method)
            params = method.params[1:]
            bound = [(params[i], arg) for i, arg in enumerate(site.call.args) if i < len(params)]
            bound += [(kw.arg, kw.value) for kw in site.call.keywords if kw.arg is not None]
            for param, arg in bound:
                holder = kept.get(param)
                if holder is None or isinstance(arg, ast.Starred):
                    continue
                if not facts.flow.carries_graph(arg, site.stmt) or not _graph_value(facts, arg, site.stmt, backwarded):
                    continue
                if not _grows_across_calls(facts, scope, loop, callee, holder):
                    continue
                store = next(
                    (stmt for name, value, stmt in _accumulations(method, lambda s: True)
                     if name == holder and _reads_parameter(value, param) and not _slot_rewritten_each_call(stmt)),
                    None,
                )
                if store is None:
                    continue
                arg_text = facts.source.segment(arg)
                line = getattr(site.stmt.node, "lineno", "?")
                message = (
                    f"`{holder}` lives on the object and keeps the autograd graph of `{arg_text}` from every "
                    f"iteration alive (called every iteration from `{scope.name}`, line {line}, with `{arg_text}`): "
                    f"pass `{detached(facts.source, arg)}` (or `.item()`)"
                )
                if callee.module is facts.analysed:
                    yield Violation(CODE, message, store.node)
                elif callee.module.path is not None and callee.module.source is not None:
                    yield Violation(CODE, message, store.node, origin=Origin(str(callee.module.path), callee.module.source))


def _grows_across_calls(facts: ModuleFacts, scope: Scope, loop: Loop, callee, holder: str) -> bool:
    """The attribute is never started anew while the loop runs (only before it, or in `__init__`),
    never backward-ed and never handed out by a method: it grows with every iteration."""
    if next(lifetimes.resets(scope, holder, within=loop), None) is not None:
        return False
    # (method, the module it is in) for the callee's class and the caller's
    methods = [(s, callee.module) for s in callee.module.collected.scopes if s.class_node is callee.scope.class_node]
    if scope.class_node is not None and scope.class_node is not callee.scope.class_node:
        methods += [(s, facts.analysed) for s in facts.collected.scopes if s.class_node is scope.class_node]
    for method, module in methods:
        if method is not scope and method.name != "__init__" and next(lifetimes.resets(method, holder), None) is not None:
            return False  # reset in another method, at a time the loop does not show
        if any(holder in names_in(value) for value, _ in method.returns):
            return False  # handed out: its use is not in sight
        if any(e.kind == BACKWARD and e.tensor is not None and holder in names_in(e.tensor)
               for e in module.direct.get(id(method), [])):
            return False  # backward-ed later: a deferred loss
    return True


def _kept_in_handed_containers(facts: ModuleFacts, sf, backward_names: set[str]) -> Iterator[Violation]:
    """`self._update_from_batch(batch, metrics)` in a loop, where the called function runs its own
    backward and keeps a tensor of that graph in the container it is handed
    (`metrics["loss"].append(loss)`): the caller's `metrics`, carried from one iteration to the
    next, keeps every step's graph. Reported at the store, with the call; no fix, since other
    callers may hand it a fresh container."""
    scope = sf.scope
    reported: set[int] = set()
    # the calls that run a backward, as the events already resolved them
    for event in sf.events:
        call, callee = event.call, event.callee
        if event.kind != BACKWARD or call is None or callee is None or not event.stmt.loops or event.stmt.no_grad:
            continue
        carried = dict(_carried_arguments(facts, scope, call, event.stmt, backward_names))
        bound = bound_arguments(call, callee) if carried else None
        for param, argument in (bound or {}).items():
            if id(argument) not in carried:
                continue
            for value, stmt, at in _graphs_kept_in_parameter(callee, param):
                if id(stmt) not in reported:
                    reported.add(id(stmt))
                    yield _kept_through_call(facts, callee, value, stmt, at, param, event.stmt, carried[id(argument)])


def _carried_arguments(
    facts: ModuleFacts, scope: Scope, call: ast.Call, at: Stmt, backward_names: set[str]
) -> Iterator[tuple[int, str]]:
    """The names a call in a loop hands on that live from one iteration to the next (made before
    the loop, never started anew in it, nothing taken back out): (id of the argument, its name)."""
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        if not isinstance(argument, ast.Name) or argument.id in backward_names:
            continue
        loop = next((l for l in at.loops if lifetimes.outlives(scope, argument.id, l)), None)
        if loop is None or lifetimes.consumed(scope, argument.id, facts.collected.scopes):
            continue
        if not lifetimes.lives_one_batch(scope, argument.id, loop, facts):
            yield id(argument), argument.id


def _graphs_kept_in_parameter(callee: Callee, param: str) -> Iterator[tuple[ast.expr, Stmt, Stmt]]:
    """The tensors of its own backward's graph that a function keeps in the container `param` it is
    handed, never rebound or emptied inside it: (value, store, where the value is judged)."""
    scope = callee.scope
    if len(scope.definitions(param)) != 1 or next(lifetimes.resets(scope, param), None) is not None:
        return
    events = callee.module.direct.get(id(scope), [])
    if not any(e.kind == BACKWARD and not e.helper for e in events):
        return
    graph = backward_ancestry(scope, events)
    kinds = ValueKinds(callee.module.flow, _backward_tensors(events))
    for holder, value, stmt in _accumulations(scope, lambda s: True):
        at = _judged_at(value, stmt)
        if holder != param or at is None or not (_derived_names(scope, value, at) & graph):
            continue
        if kinds.of(value, at) == TENSOR and callee.module.flow.carries_graph(value, at):
            yield value, stmt, at


def _kept_through_call(
    facts: ModuleFacts, callee: Callee, value: ast.expr, stmt: Stmt, at: Stmt, param: str, call: Stmt, held: str
) -> Violation:
    """The finding at the callee's store; its message names the caller's call."""
    caller = call.scope.name
    source = callee.module.source if callee.module is not facts.analysed else facts.source
    assert source is not None
    notes = [f"`{caller}` hands it the same `{held}` on every iteration, line {getattr(call.node, 'lineno', '?')}"]
    if at is not stmt:
        notes.insert(0, _NO_GRAD_NOTE)
    message = (
        f"`{param}` keeps the autograd graph of `{source.segment(value)}` from every call alive "
        f"({'; '.join(notes)}): add `{detached(source, value)}` (or `.item()`)"
    )
    if callee.module is facts.analysed or callee.module.path is None:
        return Violation(CODE, message, stmt.node)
    return Violation(CODE, message, stmt.node, origin=Origin(str(callee.module.path), source))
