"""How long a value lives and what produced it: an accumulator reset every iteration (or every
window) against one that outlives the loop, `self` attributes across the methods of a class, and
whether a value comes out of a forward pass that runs with autograd on."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from accumlint.analysis.collect import Loop, Scope, Stmt
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.exprs import FILLING_METHODS, dotted, int_value, is_constant, last_part, method_of, names_in, walk
from accumlint.frameworks import Role

if TYPE_CHECKING:
    from accumlint.analysis.facts import ModuleFacts

_CLEARING = {"clear", "reset", "reset_"}  # not `zero_` or `fill_`: in place on a tensor, they keep its autograd chain
# Methods a framework runs with autograd off (Lightning's evaluation hooks, Hugging Face's
# prediction_step): what they keep carries no graph.
NO_GRAD_HOOKS = frozenset({
    "validation_step", "test_step", "predict_step", "prediction_step", "evaluation_step",
    "on_validation_batch_end", "on_test_batch_end", "on_predict_batch_end",
    "on_validation_epoch_end", "on_test_epoch_end", "validation_epoch_end", "test_epoch_end",
})
_MODEL_NAMES = (
    "model", "net", "network", "encoder", "decoder", "generator", "discriminator", "policy",
    "rnn", "lstm", "gru", "backbone", "critic", "actor", "transformer", "unet", "vae",
)
# The last word of a name that holds something a model owns or is configured with, not the model
# (`critic_scheduler`, `model_config`, `actor_optim`): a call on it runs no forward pass.
_NOT_MODEL_WORDS = frozenset({
    "optim", "optimizer", "opt", "scheduler", "sched", "lr", "config", "cfg", "conf", "args", "kwargs",
    "params", "parameters", "state", "path", "dir", "name", "names", "type", "kind", "cls", "class",
    "file", "url", "id", "version", "dtype", "device", "size", "dim", "tokenizer", "processor", "loss",
    "losses", "scaler", "lock", "queue", "group", "groups", "registry", "factory", "builder",
    "output", "outputs", "out", "outs", "pred", "preds", "logits", "result", "results",
})
_MODEL_METHODS = {"parameters", "named_parameters", "eval", "train", "zero_grad", "state_dict", "modules"}
_FORWARD_METHODS = {"forward", "__call__"}


_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp, ast.SetComp, ast.Constant)


def _fresh(value: Optional[ast.expr], name: str) -> bool:
    """A value that starts the accumulator anew: a new container or constant (`{k: 0 for k in
    metrics}` reads the old keys only), or anything that does not read the accumulator itself."""
    return value is not None and (isinstance(value, _DISPLAYS) or name not in names_in(value))


def _only_while_unset(stmt: Stmt, name: str) -> bool:
    """`if preds is None: preds = out` (then `preds = torch.cat((preds, out))`): the first value
    of a store that starts out empty, not a restart of one that holds something."""
    for node, branch in stmt.path:
        test = node.test if isinstance(node, ast.If) else None
        if (
            branch == "body" and isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and dotted(test.left) == name and is_constant(test.comparators[0], None)
        ):
            return True
    return False


def resets(scope: Scope, name: str, within: Optional[Loop] = None) -> Iterator[Stmt]:
    """Statements that start `name` anew (`total = 0`, `losses = []`, `losses.clear()`,
    `del losses[:]`), optionally only those inside `within`."""
    for definition in scope.definitions(name):
        if within is not None and not within.contains(definition.stmt):
            continue
        if definition.kind in {"assign", "unpack"} and _fresh(definition.bound_value(), name) \
                and not _only_while_unset(definition.stmt, name):
            yield definition.stmt  # `total = 0`, or `logs, sizes = [], []`
        elif definition.kind == "inplace" and definition.op in _CLEARING:
            yield definition.stmt
    for site in scope.calls:
        if within is not None and not within.contains(site.stmt):
            continue
        receiver, method = method_of(site.call)
        if method in _CLEARING and receiver is not None and dotted(receiver) == name:
            yield site.stmt
    for stmt in scope.stmts:
        if isinstance(stmt.node, ast.Delete) and (within is None or within.contains(stmt)):
            for target in stmt.node.targets:
                base = target.value if isinstance(target, ast.Subscript) else target
                if dotted(base) == name:
                    yield stmt


def outlives(scope: Scope, name: str, loop: Loop) -> bool:
    """`name` is carried from one iteration of `loop` to the next and never started anew inside it:
    its first use in an iteration reads it, and no statement of the loop resets it (a total reset
    every iteration or every window cannot grow)."""
    inside = [o for o in scope.occurrences if o.name == name and loop.contains(o.stmt)]
    if not inside or min(inside, key=lambda o: o.seq).write:
        return False
    return next(resets(scope, name, loop), None) is None


_TAKING = frozenset({"pop", "popleft", "popitem"})


def consumed(scope: Scope, name: str, scopes: list[Scope]) -> bool:
    """Something takes items back out of `name` (`queue.pop(0)`, `chunks[i].pop()`), here or in a
    function nested in this one that shares the name: a queue whose items are handed on, not a
    store that grows."""
    readers = [scope] + [s for s in scopes if s.parent is scope and name not in s.defs]
    for reader in readers:
        for site in reader.calls:
            receiver, method = method_of(site.call)
            while isinstance(receiver, ast.Subscript):
                receiver = receiver.value
            if method in _TAKING and receiver is not None and dotted(receiver) == name:
                return True
    return False


def lives_one_window(scope: Scope, name: str, loop: Loop, steps: list[Stmt]) -> bool:
    """The loop is one accumulation window (its backward inside, the optimizer step after it and
    none in it: `for micro in range(k): ...; total += loss` then `opt.step()`), and `name` is a
    local started anew before each run of it, in the enclosing loop or on each call of the
    function: it lives one window and cannot grow."""
    if "." in name or loop.implicit or any(loop.contains(step) for step in steps):
        return False
    parent = loop.parent
    if not any(step.order > loop.last_order and (parent is None or parent.contains(step)) for step in steps):
        return False
    starts = _starts_before(scope, name, loop)
    if parent is not None:
        return bool(starts)
    return bool(starts) and not _escapes(scope, name)


def lives_one_batch(scope: Scope, name: str, loop: Loop, facts: ModuleFacts) -> bool:
    """The loop runs inside a loop over the data and walks something else (the heads, the
    classifiers each with its optimizer), and `name` starts anew in the data loop before it
    (`losses = []` per batch): it keeps one batch's values, not the run's."""
    parent = loop.parent
    if parent is None or "." in name or not over_data(parent, facts) or over_data(loop, facts):
        return False
    return bool(_starts_before(scope, name, loop))


def lives_one_call(
    scope: Scope, name: str, loop: Loop, steps: list[Stmt], facts: ModuleFacts, keeps: "ArgumentKept"
) -> bool:
    """The loop makes passes over one batch, not over the data (`for it in range(n_iters)`, each
    pass with its backward), the function steps no optimizer (its caller steps after the call),
    and `name` is a local started anew before the loop: it holds one call's passes. Handed back,
    it must be bound afresh at every call of the function in this module (`y_hats, loss =
    self.train_on_batch(x, y)`) and handed on only to calls that do not keep it (`keeps` says
    which project functions do), or it may outlive the batch there."""
    if "." in name or loop.implicit or loop.parent is not None or steps or not _counted_passes(loop, facts):
        return False
    if not _starts_before(scope, name, loop):
        return False
    return not _escapes(scope, name) or _bound_afresh_by_callers(scope, name, facts, keeps)


# Whether a call keeps one of its arguments past the call (`self.remember(y_hats)` storing it).
ArgumentKept = Callable[[ast.Call, Scope, ast.expr], bool]


def _counted_passes(loop: Loop, facts: ModuleFacts) -> bool:
    """`for it in range(self.opts.n_iters_per_batch)`: a count of passes, not a walk over a
    collection (`range(len(prompts))`, `range(x.shape[0])`, the data in minibatches, a loader)."""
    iterable = loop.iter_expr
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "range" and iterable.args):
        return False
    sized = (
        (isinstance(node, ast.Call) and dotted(node.func) == "len") or _sized_by(node) is not None
        for node in ast.walk(iterable.args[-1])
    )
    return not any(sized) and not over_data(loop, facts)


def _returned_slot(function: Scope, name: str) -> Optional[int]:
    """Where every `return` of the function hands `name` back in its tuple (`return y_hats, loss`
    -> 0); None when it is returned whole, in no tuple, or at different places."""
    slots = set()
    for value, _ in function.returns:
        if isinstance(value, ast.Tuple):
            slots |= {i for i, element in enumerate(value.elts) if isinstance(element, ast.Name) and element.id == name}
        else:
            return None
    return slots.pop() if len(slots) == 1 else None


def _bound_afresh_by_callers(function: Scope, name: str, facts: ModuleFacts, keeps: ArgumentKept) -> bool:
    """Every call of `function` in this module (one at least; for a method, each through `self`)
    is the whole value of a plain assignment to names (`out = f(x)`, `a, b = self.f(x)`), and what
    it binds `name` to is only handed to calls that do not keep it."""
    slot = _returned_slot(function, name)
    sites = facts.calls_named(function.name)
    for _, site in sites:
        if function.class_node is not None and not (dotted(site.call.func) or "").startswith("self."):
            return False  # `coach.train_on_batch(x)` or another object's method: not known to be this one
        node = site.stmt.node
        targets = node.targets if isinstance(node, ast.Assign) and node.value is site.call else None
        if targets is None or not all(_plain_names(t) for t in targets):
            return False
        bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if slot is not None and all(isinstance(t, ast.Tuple) and len(t.elts) > slot for t in targets):
            bound = {e.id for t in targets if isinstance(t, ast.Tuple) and isinstance(e := t.elts[slot], ast.Name)}
        if _kept_by_caller(site.stmt.scope, bound, keeps):
            return False
    return bool(sites)


def _plain_names(target: ast.expr) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_plain_names(element) for element in target.elts)
    return isinstance(target, ast.Name)


def _kept_by_caller(scope: Scope, names: set[str], keeps: ArgumentKept) -> bool:
    """The caller reads one of `names` other than as an argument of a call that does not keep it
    (`log_images(x, y_hats)` reads it; `history.append(y_hats)`, a project method that stores it,
    `self.last = y_hats` or `return y_hats` may keep it past the batch)."""
    parents = {id(child): node for node in ast.walk(scope.node) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(scope.node):
        if not (isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.keyword):
            parent = parents.get(id(parent))
        if not isinstance(parent, ast.Call) or parent.func is node:
            return True
        if method_of(parent)[1] in FILLING_METHODS or keeps(parent, scope, node):
            return True
    return False


def _starts_before(scope: Scope, name: str, loop: Loop) -> list[Stmt]:
    """The statements that start `name` anew before `loop` runs: in the loop around it, or
    anywhere earlier in the function when there is none."""
    return [
        stmt for stmt in resets(scope, name, loop.parent)
        if stmt.order < loop.first_order and not loop.contains(stmt)
    ]


def _escapes(scope: Scope, name: str) -> bool:
    """The function hands `name` on: returns or yields it, binds another name or attribute to it,
    or declares it global."""
    for stmt in scope.stmts:
        node = stmt.node
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, ast.Return) and node.value is not None and name in names_in(node.value):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Yield, ast.YieldFrom)):
            if node.value.value is not None and name in names_in(node.value.value):
                return True
    return any(
        d.kind == "assign" and d.value is not None and dotted(d.value) == name
        for definitions in scope.defs.values() for d in definitions
    )


def class_methods(facts: ModuleFacts, scope: Scope) -> list[Scope]:
    """The methods of the class `scope` is a method of (this module's definition of it)."""
    if scope.class_node is None:
        return []
    return [sf.scope for sf in facts.scopes if sf.scope.class_node is scope.class_node]


def own_attribute(name: str) -> bool:
    """`self.history`: an attribute of the object a method runs on."""
    head, _, rest = name.partition(".")
    return head == "self" and bool(rest) and "." not in rest


def model_objects(facts: ModuleFacts) -> set[str]:
    """Names that hold a model: their parameters are taken, they are switched to eval/train, they
    are built from a pretrained checkpoint, or their name says so."""
    found: set[str] = set()
    for sf in facts.scopes:
        for site in sf.scope.calls:
            receiver, method = method_of(site.call)
            if method in _MODEL_METHODS and receiver is not None and dotted(receiver):
                found.add(dotted(receiver) or "")
        for name, definitions in sf.scope.defs.items():
            for definition in definitions:
                value = definition.value
                if isinstance(value, ast.Call) and last_part(dotted(value.func)) == "from_pretrained":
                    found.add(name)
    return {name for name in found if name}


def is_model(name: Optional[str], models: set[str]) -> bool:
    if not name:
        return False
    if name in models:
        return True
    last = last_part(name).lower()
    if "_" in last and last.rsplit("_", 1)[1] in _NOT_MODEL_WORDS:
        return False
    return any(last == hint or last.endswith("_" + hint) or last.startswith(hint + "_") for hint in _MODEL_NAMES)


def _forward_call(call: ast.Call, models: set[str]) -> bool:
    """`model(x)`, `self.model(x)`, `model.forward(x)`, or a loss computed from the model
    (`compute_loss(model, batch)`)."""
    if is_model(dotted(call.func), models):
        return True
    receiver, method = method_of(call)
    if method in _FORWARD_METHODS and receiver is not None and is_model(dotted(receiver), models):
        return True
    callee = last_part(dotted(call.func)).lower()
    return "loss" in callee and any(is_model(dotted(arg), models) for arg in call.args)


def forward_in(expr: ast.expr, at: Stmt, models: set[str], loop: Loop, depth: int = 0) -> bool:
    """The value comes out of a forward pass run inside `loop` with autograd on: a model call in the
    expression itself, or in the definitions inside the loop that it reads."""
    if depth > 8 or at.no_grad:
        return False
    for node in walk(expr):
        if isinstance(node, ast.Call) and _forward_call(node, models):
            return True
    for name in names_in(expr):
        base, updates = reaching(name, at.scope, at.order)
        for definition in ([base] if base is not None else []) + updates:
            if definition.value is None or not loop.contains(definition.stmt) or definition.stmt is at:
                continue
            if definition.kind == "unpack" and definition.index[:1] not in {(0,), ()}:
                continue  # `out, seconds = policy(x)`: only the first result is taken as the output
            if definition.kind in {"assign", "unpack", "aug", "for"} and forward_in(
                definition.value, definition.stmt, models, loop, depth + 1
            ):
                return True
    return False


_DATA_HINTS = ("loader", "dataset", "batches", "data_iter", "dataiter")


def over_data(loop: Loop, facts: ModuleFacts) -> bool:
    """The loop walks a data loader or dataset (`for x, y in val_loader`, `enumerate(tqdm(loader))`):
    an evaluation pass, not a loop over tiles, prompts or time steps inside a model."""
    if loop.iter_expr is None:
        return False
    if _minibatch_walk(loop):
        return True
    for node in walk(loop.iter_expr):
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node)
            if not name:
                continue
            if facts.roles.role(name) == Role.LOADER or any(h in last_part(name).lower() for h in _DATA_HINTS):
                return True
    return False


def _minibatch_walk(loop: Loop) -> bool:
    """`for step in range(len(samples) // batch_size):` whose body slices `samples` by the step
    (`samples[step * batch_size: (step + 1) * batch_size]`): a walk over data in minibatches."""
    iterable, target = loop.iter_expr, getattr(loop.node, "target", None)
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "range" and isinstance(target, ast.Name)):
        return False
    function = loop.scope.name.lower()
    if function in {"forward", "__call__"} or "loss" in function:
        return False  # a model's or a loss's own pass over its inputs: its caller picks the grad mode
    walked = {_sized_by(node) for arg in iterable.args for node in walk(arg)} - {None}
    for node in walk(loop.node):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and dotted(node.value) in walked:
            bounds = [b for b in (node.slice.lower, node.slice.upper) if b is not None]
            if any(target.id in names_in(b) for b in bounds):
                return True
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not node.keywords:
            # `get_batch(source, i)`: a helper handed the walked data and the step slices it
            handed = [dotted(arg) for arg in node.args]
            if any(h in walked for h in handed) and target.id in handed:
                return True
    return False


def _sized_by(node: ast.AST) -> Optional[str]:
    """The data whose size a range is built from: `len(x)`, `x.size(0)`, `x.shape[0]`."""
    if isinstance(node, ast.Call) and node.args:
        if dotted(node.func) == "len":
            return dotted(node.args[0])
        if isinstance(node.func, ast.Attribute) and node.func.attr == "size" and int_value(node.args[0]) == 0:
            return dotted(node.func.value)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return dotted(node.value.value) if int_value(node.slice) == 0 else None
    return None


def grad_disabled(scope: Scope) -> bool:
    """The function turns autograd off by a statement (`torch.set_grad_enabled(False)`)."""
    for site in scope.calls:
        if last_part(dotted(site.call.func)) in {"set_grad_enabled", "_set_grad_enabled"} and not site.context_manager:
            first = site.call.args[0] if site.call.args else None
            if isinstance(first, ast.Constant) and first.value is False:
                return True
    return False


def called_without_grad(facts: ModuleFacts, scope: Scope) -> bool:
    """Some call of this function in the module runs under `torch.no_grad()`, or the function runs in
    a framework hook that has autograd off."""
    if scope.name in NO_GRAD_HOOKS or scope.no_grad or grad_disabled(scope):
        return True
    return any(site.stmt.no_grad or grad_disabled(sf.scope) for sf, site in facts.calls_named(scope.name))
