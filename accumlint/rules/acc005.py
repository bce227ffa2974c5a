"""ACC005 partial-window-dropped: a `% k` gate over a finite loader with no end-of-data clause."""

from __future__ import annotations

from typing import Iterator, Optional

import ast
import dataclasses

from accumlint.analysis import ModuleFacts
from accumlint.analysis.events import BACKWARD, STEP, ZERO, Event
from accumlint.analysis.collect import FOR_LOOPS, Definition, Loop, Scope, Stmt
from accumlint.analysis.reach import reached
from accumlint.analysis.calls import AnalysedModule, Resolver, bound_arguments
from accumlint.analysis.handoff import instance_classes
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.epoch_count import hand_epoch_count
from accumlint.analysis.exprs import class_like, dotted, int_value, is_constant, is_true, keyword, last_part, mentions, name_equals, names_in, ordered, plus_constant, positional
from accumlint.analysis import lifetimes
from accumlint.analysis.sized import has_len
from accumlint.frameworks import Role
from accumlint.analysis.windows import Window, range_len
from accumlint.model import Fix, Violation
from accumlint.rules.edits import MUL, OR, operand, replace
from accumlint.rules.common import place_in
from accumlint.rules.meta import FixSafety
from accumlint.source import SourceText

CODE = "ACC005"
NAME = "partial-window-dropped"
SUMMARY = "the last micro-batches of each epoch never reach optimizer.step()"
FIX: FixSafety = "sometimes"
_ENDLESS = {"cycle", "repeat", "count", "islice"}
# Keywords that ask a project dataset never to run out (`infinite=True`).
_ENDLESS_SWITCHES = {"infinite", "endless"}
# Calls that hand back what they are given, in order (`accelerator.prepare(model, opt, dl)`).
_HANDING_BACK = {"prepare", "setup", "setup_dataloaders"}
_PROGRESS_BARS = {"tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "track"}


def _sized(expr: ast.expr) -> Optional[ast.expr]:
    """The object whose len() the loop runs over, when the code shows one."""
    if isinstance(expr, ast.Call):
        name = dotted(expr.func) or ""
        if name in _PROGRESS_BARS:
            inner = positional(expr, 0)
            return _sized(inner) if inner is not None else None
        return None
    if isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript)):
        return expr
    return None


def _chain_methods(expr: Optional[ast.expr]) -> Iterator[ast.Call]:
    """`ds.shuffle(8).batch(4).repeat()`: the method calls of a chain, outermost first."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        yield expr
        expr = expr.func.value


def _endless_or_counted(source: ast.expr, scope: Scope, resolver: Resolver) -> bool:
    """A `tf.data` pipeline made endless by `.repeat()` (no count), or cut to a number of steps by
    `.take(n)`, or a project class whose `__iter__` never ends (`while True:` in a multi-task
    loader) or that is asked not to (`ConstantLengthDataset(..., infinite=True)`), also handed to a
    wrapper (`PrefetchLoader(meta_loader)`, `DataLoader(dataset)`): the epoch has no partial window
    the code can see. Followed through the names it was assigned from, the loaders a `prepare`
    call hands back, and the returns of the project function that built them."""
    pending: list[tuple[ast.expr, Scope]] = [(source, scope)]
    seen, visited = 0, set[object]()
    while pending and seen < 12:
        expr, at = pending.pop(0)
        key = (dotted(expr), id(at)) if dotted(expr) else id(expr)  # a name is followed once per scope
        if key in visited:
            continue
        visited.add(key)
        seen += 1
        if isinstance(expr, ast.Call) and isinstance(expr.func, (ast.Name, ast.Attribute)):
            if resolver.iterates_endlessly(expr) or any(
                kw.arg in _ENDLESS_SWITCHES and is_true(kw.value) for kw in expr.keywords
            ):
                return True
            wrapped = positional(expr, 0)
            if isinstance(wrapped, (ast.Name, ast.Attribute, ast.Call)) and class_like(dotted(expr.func) or ""):
                pending.append((wrapped, at))  # a wrapper iterates what it is given
        for call in _chain_methods(expr):
            method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
            if method == "repeat" and not call.args and not call.keywords or method == "take":
                return True
        root = expr
        while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
            root = root.func.value
        name = dotted(root)
        if name is None:
            continue
        for current in at.sight():
            for definition in current.definitions(name):
                pending.extend(_made_from(definition, resolver))
    return False


def _made_from(definition: Definition, resolver: Resolver) -> list[tuple[ast.expr, Scope]]:
    """What a name was made from: an assignment's value and, where that calls a project function,
    what the function returns (read in its scope; for `train_dl, eval_dl = make_loaders(args)` that
    element of it); for `model, dl = accelerator.prepare(model, dl)` the argument in the same place."""
    value = definition.value
    found: list[tuple[ast.expr, Scope]] = []
    if definition.kind == "assign" and value is not None:
        found.append((value, definition.stmt.scope))
    if definition.kind not in {"assign", "unpack"} or not isinstance(value, ast.Call):
        return found
    index = definition.index[0] if definition.kind == "unpack" and len(definition.index) == 1 else None
    if definition.kind == "unpack" and index is None:
        return found
    if index is not None and isinstance(value.func, ast.Attribute) and value.func.attr in _HANDING_BACK:
        argument = positional(value, index)
        return [(argument, definition.stmt.scope)] if argument is not None else []
    if class_like(dotted(value.func) or ""):
        return found  # a class's instance: read above through what it wraps
    callee = resolver.resolve(value, definition.stmt.scope)
    for returned, stmt in callee.scope.returns if callee is not None else []:
        if index is None:
            found.append((returned, stmt.scope))
        elif isinstance(returned, ast.Tuple) and index < len(returned.elts):
            found.append((returned.elts[index], stmt.scope))
    return found


def _epoch_counter(window: Window, resolver: Resolver) -> Optional[tuple[str, int, Optional[ast.expr]]]:
    """(counter, start, sized iterable) when the loop counts the batches of one epoch."""
    node = window.micro_loop.node
    if window.micro_loop.entry:
        return None  # a project step method: who calls it, over what data, is not in sight
    if window.micro_loop.implicit:
        # Lightning's `training_step(self, batch, batch_idx)`: batch_idx counts the epoch's batches
        # (the end of the data is `self.trainer.is_last_batch`; no len() in sight, so no fix).
        params = [p for p in window.micro_loop.scope.params if p not in {"self", "cls"}]
        return (params[1], 0, None) if len(params) >= 2 else None
    if not isinstance(node, FOR_LOOPS):
        return None
    iterable = node.iter
    if isinstance(iterable, ast.Name):  # `bar = tqdm(enumerate(loader))`, then `for step, batch in bar:`
        header = window.micro_loop.header
        definition, updates = reaching(iterable.id, header.scope, header.order, header)
        if definition is not None and not updates and definition.kind == "assign" and isinstance(definition.value, ast.Call):
            iterable = definition.value
    if isinstance(iterable, ast.Call) and (dotted(iterable.func) or "") in _PROGRESS_BARS:
        wrapped = positional(iterable, 0)  # `tqdm(enumerate(loader))`
        if isinstance(wrapped, ast.Call) and dotted(wrapped.func) == "enumerate":
            iterable = wrapped
    over_len = range_len(iterable)
    if over_len is not None and isinstance(node.target, ast.Name):
        return node.target.id, 0, _sized(over_len)
    if _batches_of(iterable, window) and isinstance(node.target, ast.Name):
        return node.target.id, 0, None  # `for step in range(len(samples) // batch_size):` each epoch
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "enumerate"):
        return None
    source = positional(iterable, 0)
    if source is None:
        return None
    inner = source
    if isinstance(inner, ast.Call) and last_part(dotted(inner.func)) in _ENDLESS:
        return None
    if _endless_or_counted(inner, window.micro_loop.scope, resolver):
        return None
    if isinstance(inner, ast.Call) and dotted(inner.func) == "range":
        # `enumerate(range(total_steps))` as the whole run, or over a multiple of k: no epoch to end.
        # Inside an outer loop (`for i, start in enumerate(range(0, n, mb))` each epoch) it walks
        # one epoch's batches, as a loader would.
        if window.micro_loop.parent is None or any(mentions(arg, window.k_names) for arg in inner.args):
            return None
    start_expr = keyword(iterable, "start") or positional(iterable, 1)
    start = int_value(start_expr) if start_expr is not None else 0
    if start is None:
        return None
    target = node.target
    if not (isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name)):
        return None
    return target.elts[0].id, start, _sized(source)


def _passes_over_data(window: Window, resolver: Resolver) -> bool:
    """`for x, y in loader:` (or a progress bar over it): one pass over data that ends, not an
    endless or cut stream (`.repeat()`, `cycle`) nor a range of steps, which `_epoch_counter` reads."""
    loop = window.micro_loop
    if not isinstance(loop.node, FOR_LOOPS) or loop.implicit or loop.entry:
        return False
    source = loop.node.iter
    if isinstance(source, ast.Call) and (dotted(source.func) or "") in _PROGRESS_BARS:
        source = positional(source, 0) or source
    if isinstance(source, ast.Call) and (last_part(dotted(source.func)) in _ENDLESS or dotted(source.func) in {"range", "enumerate"}):
        return False
    return not _endless_or_counted(source, loop.scope, resolver)


def _batches_of(iterable: ast.expr, window: Window) -> bool:
    """`range(len(samples) // batch_size)` inside an outer loop: the number of minibatches of data
    this pass walks, which need not be a multiple of k (not a count that names k)."""
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "range" and len(iterable.args) == 1):
        return False
    count = iterable.args[0]
    return (
        window.micro_loop.parent is not None and isinstance(count, ast.BinOp) and isinstance(count.op, ast.FloorDiv)
        and isinstance(count.left, ast.Call) and dotted(count.left.func) == "len"
        and not mentions(count, window.k_names)
    )


def _flushed_after(window: Window, facts_events) -> bool:
    loop = window.micro_loop
    for event in facts_events:
        if event.kind != STEP or event.order <= loop.last_order or loop.contains(event.stmt):
            continue
        if loop.parent is None or loop.parent.contains(event.stmt):
            return True
    return False


def _discarded_after(window: Window, facts_events) -> bool:
    """A zeroing right after the micro-batch loop, in the same epoch (`optimizer.zero_grad()  #
    drop the partial window`): the code throws the tail away on purpose, nothing leaks into the
    next epoch. A choice like `drop_last=True`, not this bug."""
    loop = window.micro_loop
    later = sorted((e for e in facts_events if e.order > loop.last_order), key=lambda e: e.order)
    for event in later:
        if loop.parent is not None and not loop.parent.contains(event.stmt):
            return False
        if event.kind == ZERO:
            return True
        if event.kind in {STEP, BACKWARD}:
            return False
    return False


def _cut_by_count(window: Window, counter: str) -> bool:
    """`if i >= steps_per_epoch: break` (or `continue`) in the loop: the epoch is a number of
    batches the code chose, not the length of the data; whether it is a multiple of k is not
    in sight."""
    return _loop_cut_by_count(window.micro_loop, counter)


def _loop_cut_by_count(loop: Loop, counter: str) -> bool:
    scope = loop.scope
    for stmt in scope.loop_statements(loop):
        node = stmt.node
        if stmt.loop is not loop or not isinstance(node, ast.If) or not stmt.is_statement:
            continue
        if not (node.body and isinstance(node.body[-1], (ast.Break, ast.Continue))):
            continue
        sides = ordered(node.test) or _equated(node.test, scope)
        if sides is not None and _reads_counter(sides[0], counter, stmt) and not _reads_counter(sides[1], counter, stmt):
            return True
    return False


def _equated(test: ast.expr, scope: Scope) -> Optional[tuple[ast.expr, ast.expr]]:
    """`if step_idx == max_steps: break`: a count run up to a bound the code chose, as `>=` reads;
    not where the code tests the bound against None elsewhere (`if self.max_steps_per_epoch is not
    None`): an optional bound compares unequal to every count, and the epoch then runs whole."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    for count, bound in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        name = dotted(bound)
        if name is not None and not _tested_against_none(name, scope):
            return count, bound
    return None


def _tested_against_none(name: str, scope: Scope) -> bool:
    scopes = {id(s): s for s in (*scope.sight(), *scope.class_scopes)}
    return any(
        isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Is, ast.IsNot))
        and dotted(node.left) == name and is_constant(node.comparators[0], None)
        for s in scopes.values() for node in ast.walk(s.node)
    )


def _sized_in_steps(sized: Optional[ast.expr], scope: Scope, depth: int = 0) -> bool:
    """The data the loop runs over was made as long as the run's optimizer steps need
    (`Dataset(..., num_instances=batch_size * args.num_training_steps)`, seen through the loader
    and progress bar built on it): the code sized it in whole steps, so whether a partial
    window is left is not in sight."""
    if sized is None or depth > 8:  # names and the calls that made them alternate
        return False
    if isinstance(sized, ast.Call):
        if any(_times_steps(argument) for argument in [*sized.args, *(kw.value for kw in sized.keywords)]):
            return True
        return bool(sized.args) and _sized_in_steps(sized.args[0], scope, depth + 1)
    name = dotted(sized)
    return name is not None and any(
        definition.kind == "assign" and _sized_in_steps(definition.value, scope, depth + 1)
        for seen in scope.sight() for definition in seen.definitions(name)
    )


def _times_steps(expr: ast.expr) -> bool:
    """`batch_size * args.num_training_steps`: a count of optimizer steps times something."""
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult)):
        return False
    return any(
        (last := (last_part(dotted(side)) or "").lower()).endswith("steps") and "accum" not in last and "warmup" not in last
        for side in (expr.left, expr.right)
    )


def _reads_counter(expr: ast.expr, counter: str, at) -> bool:
    """The expression reads the counter, directly or through a name computed from it in this
    iteration (`step = i // update_freq; if step >= steps_per_epoch: continue`)."""
    names = names_in(expr)
    if counter in names:
        return True
    scope, loop = at.scope, at.loop
    for name in names:
        for definition in scope.definitions(name):
            if definition.kind == "assign" and definition.value is not None and definition.order < at.order \
                    and loop is not None and loop.contains(definition.stmt) and counter in names_in(definition.value):
                return True
    return False


def _leftover(window: Window, facts_events) -> str:
    """What becomes of the unstepped batches' gradients, as far as the epoch loop shows it."""
    loop, epochs = window.micro_loop, window.micro_loop.parent
    if epochs is None or loop.implicit:
        return ""  # the epochs are counted by a caller or a framework: not in sight
    for event in facts_events:
        if event.kind == ZERO and epochs.contains(event.stmt) and not loop.contains(event.stmt):
            return "; their gradients are zeroed before the next epoch's first step"
        if event.kind == ZERO and loop.contains(event.stmt) and _at_first_batch(event.stmt, loop):
            return "; their gradients are zeroed at the next epoch's first batch"
    return "; their gradients are added to the next epoch's first window, and the last epoch's are never applied"


def _offset(counter: ast.expr) -> Optional[int]:
    """`i` -> 0, `i + 1` -> 1."""
    base, added = plus_constant(counter)
    return added if isinstance(base, ast.Name) else None


def _fires_at_zero(test: ast.expr, counter: ast.expr) -> bool:
    """The gate holds when `counter % k` is 0: `c % k == 0`, `0 == c % k`, `not c % k`."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            sides = (node.left, node.comparators[0])
            for mod, other in (sides, sides[::-1]):
                if isinstance(mod, ast.BinOp) and isinstance(mod.op, ast.Mod) and mod.left is counter:
                    return int_value(other) == 0
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand_ = node.operand
            if isinstance(operand_, ast.BinOp) and isinstance(operand_.op, ast.Mod) and operand_.left is counter:
                return True
    return False


def _wrapped_count(definition: Definition, name: str) -> Optional[int]:
    """`n = (n + 1) % k` (1: it counts as it wraps), `n = n % k` or `n %= k` (0: it only wraps):
    the count goes back to 0 at the window's end. None for any other binding."""
    value = definition.value
    if definition.kind == "aug":
        return 0 if definition.op == "ModuloAssign" else None
    if definition.kind != "assign" or not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod)):
        return None
    counted, added = plus_constant(value.left)
    if dotted(counted) != name or added not in (0, 1) or added == 0 and counted is not value.left:
        return None
    return added


def _restarted_count(window: Window) -> Optional[str]:
    """`n = 0` before the loop, `n += 1` every micro-step, `if n == k: ...; n = 0` (or the count
    kept in range, `n = (n + 1) % k` and `if n == 0:`): a count of the window's micro-batches that
    starts afresh with each pass over the data, so the batches after the last full window are left
    over at the end of it."""
    test = window.test
    if window.form != "gate" or test is None or not test.hand_counted or test.flag is not None:
        return None
    if not isinstance(test.counter, ast.Name):
        return None
    name, loop = test.counter.id, window.micro_loop
    header = loop.header
    starts = counts = resets = 0
    for definition in loop.scope.definitions(name):
        stmt, value = definition.stmt, definition.value
        if definition.kind == "assign" and int_value(value) == 0 and not loop.contains(stmt):
            # set before the loop, in the same block of the epoch loop (or the epoch function)
            starts += int(stmt.order < header.order and [id(x) for x in stmt.loops] == [id(x) for x in header.loops])
        elif definition.kind == "assign" and int_value(value) == 0 and window.in_step_block(stmt):
            resets += 1
        elif definition.kind == "aug" and int_value(value) == 1 and window.every_micro_step(stmt):
            counts += 1
        elif (wrapped := _wrapped_count(definition, name)) is not None and window.every_micro_step(stmt):
            counts += wrapped  # `n = (n + 1) % k` counts and wraps at once; `n %= k` only wraps
            resets += 1
        else:
            return None
    return name if starts >= 1 and counts == 1 and resets >= 1 else None


def _at_first_batch(stmt, loop) -> bool:
    """Under `if i == 0:` alone, `i` the loop's own index counted from 0 (`enumerate(loader)`), or a
    counter the statements just before the loop set to 0 (`batch_idx = 0`, then `for b in loader:`
    with `if batch_idx == 0: optimizer.zero_grad()`): it holds at the first batch of every pass over
    the data (not `if epoch == 0 and i == 0:`)."""
    blocks = stmt.blocks_inside(loop.node) or ()
    tests = [node.test for node, branch in blocks if isinstance(node, ast.If) and branch == "body"]
    tested = name_equals(tests[0]) if len(tests) == 1 else None
    if tested is None or tested[1] != 0:
        return False
    iterable = loop.iter_expr
    if isinstance(iterable, ast.Call) and dotted(iterable.func) == "enumerate" and len(iterable.args) == 1 \
            and not iterable.keywords:
        index = getattr(getattr(loop.node, "target", None), "elts", [None])[0]
        if isinstance(index, ast.Name) and tested[0] == index.id:
            return True
    return _set_to_zero_before(tested[0], loop)


def _set_to_zero_before(name: str, loop) -> bool:
    """`name = 0` among the statements right before the loop in its block (the pass starts there)."""
    block = loop.header.block or []
    position = next((i for i, node in enumerate(block) if node is loop.node), None)
    for node in reversed(block[:position] if position is not None else []):
        if isinstance(node, ast.Assign) and any(dotted(t) == name for t in node.targets):
            return int_value(node.value) == 0
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.Try)):
            return False  # a block in between may set it otherwise
    return False


def _skips_batch_zero(test: ast.expr, counter: ast.expr, k: Optional[str]) -> bool:
    """`i > 0 and i % k == 0`: a conjunct that is false for counter 0 (`i > 0`, `i != 0`, `i >= 1`, `i`)."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return False
    name = dotted(counter)
    return any(_false_at_zero(part, name, k) for part in test.values)


def _false_at_zero(part: ast.expr, name: Optional[str], k: Optional[str]) -> bool:
    """`i`, `i > 0`, `i != 0`, `i >= 1`; also `(i > 0 or k == 1)`, whose other choice only holds
    when the window's own k is 1 (no window to speak of)."""
    if dotted(part) == name:
        return True
    if isinstance(part, ast.BoolOp) and isinstance(part.op, ast.Or):
        skips = [value for value in part.values if _false_at_zero(value, name, k)]
        return bool(skips) and all(value in skips or (k is not None and name_equals(value) == (k, 1)) for value in part.values)
    if isinstance(part, ast.Compare) and len(part.ops) == 1 and dotted(part.left) == name:
        op, bound = part.ops[0], int_value(part.comparators[0])
        return (isinstance(op, (ast.Gt, ast.NotEq)) and bound == 0) or (isinstance(op, ast.GtE) and bound == 1)
    return False


def _count_ahead(window: Window, start: int, tested: ast.expr) -> int:
    """How far past 1 the gate's count is at the first batch: 0 for `(i + 1) % k` with `i` from 0,
    1 for the same over `enumerate(loader, 1)`; 0 when the count is not read that plainly."""
    assert window.test is not None
    offset = _offset(window.test.counter)
    if window.test.flag is not None or offset is None or not _fires_at_zero(tested, window.test.counter):
        return 0
    return max(start + offset - 1, 0)


def _tail(window: Window, start: int, k_text: str, tested: ast.expr) -> str:
    """How many batches are left over at the end of an epoch of `len` batches: `len % k`, or
    `(len + 1) % k` when the gate's count is already 2 at the first batch."""
    ahead = _count_ahead(window, start, tested)
    return f"(len + {ahead}) % {k_text}" if ahead else f"len % {k_text}"


def _short_first_window(window: Window, start: int, tested: ast.expr) -> str:
    """What a count already past 1 at the first batch does to the first window, for the message
    (how short it is only where that is sure: one ahead; more may be a whole window)."""
    ahead = _count_ahead(window, start, tested)
    if ahead == 1:
        return " (the gate's count is 2 at the first batch, so the first window is 1 short)"
    return f" (the gate's count is {ahead + 1} at the first batch)" if ahead else ""


def _off_by_one(window: Window, start: int, tested: ast.expr) -> bool:
    """`i % k == 0` with `i` counted from 0: the first micro-batch alone makes the first window."""
    assert window.test is not None
    offset = _offset(window.test.counter)
    return (
        window.test.flag is None and offset is not None and start + offset == 0
        and _fires_at_zero(tested, window.test.counter)
    )


_FRAMEWORK_CONFIGS = ("deepspeed", "ds_config", "zero_config")


def _one_outside_framework(window: Window, scope: Scope) -> bool:
    """k is 1 unless it is read from a DeepSpeed configuration, and then the engine owns the step
    (Accelerate's DeepSpeed optimizer wrapper does nothing on `step()`): no window of ours."""
    name = dotted(window.k)
    definitions: list[Definition] = []
    current: Optional[Scope] = scope
    while current is not None and not definitions:
        definitions = [d for d in current.definitions(name or "") if d.kind == "assign" and d.value is not None]
        current = current.parent
    ones = [d for d in definitions if (int_value(d.value) or 0) == 1]
    others = [d for d in definitions if d not in ones]
    return bool(ones) and bool(others) and all(
        d.value is not None and any(word in ast.unparse(d.value).lower() for word in _FRAMEWORK_CONFIGS)
        for d in others
    )


def _gated_elsewhere(window: Window, source: SourceText) -> bool:
    """Something besides the step (gradient sync, step bookkeeping) is decided by the same
    `counter % k` test: changing the gate would desynchronise them."""
    assert window.test is not None and window.gate is not None
    modulo = next(
        (n for n in ast.walk(window.gate.test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
         and n.left is window.test.counter),
        None,
    )
    text = source.segment(modulo) if modulo is not None else None
    step_gates = {id(w.gate) for w in (window, *window.siblings)}  # the AMP and plain paths' own gates
    # Step bookkeeping in the step block: a counter advanced there (`global_step += 1`) that a test
    # reads (logging, saving, `max_steps`): an extra step per epoch would shift all of them.
    advanced = {
        dotted(n.target) for statement in window.gate.body for n in ast.walk(statement)
        if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and dotted(n.target)
    } - {None}
    for stmt in window.micro_loop.scope.stmts:
        node = stmt.node
        if advanced and window.micro_loop.contains(stmt) and isinstance(node, (ast.If, ast.While)) and names_in(node.test) & advanced:
            return True
    for node in (n for statement in window.gate.body for n in ast.walk(statement)):
        # the step block ends the run or tests a step count (`if metrics.global_step >= max_steps:
        # ...; return`): one more step per epoch would move where the run stops or saves
        if isinstance(node, (ast.Return, ast.Break)):
            return True
        if isinstance(node, (ast.If, ast.While)) and any("step" in (last_part(n) or "").lower() for n in names_in(node.test)):
            return True
    for stmt in window.micro_loop.scope.stmts:
        if not window.micro_loop.contains(stmt) or id(stmt.node) in step_gates or isinstance(stmt.node, FOR_LOOPS):
            continue
        node = stmt.node
        inspected = node.test if isinstance(node, (ast.If, ast.While)) else node
        for sub in ast.walk(inspected):
            if text is not None and isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Mod):
                if source.segment(sub) == text:
                    return True
            if window.test.flag is not None and isinstance(sub, ast.Name) and sub.id == window.test.flag:
                if isinstance(sub.ctx, ast.Load):
                    return True
    return False


def _step_text(window: Window, module: AnalysedModule) -> str:
    """The step as the code writes it (`opt.step()`, `optimizer.apply_gradients()`); of several
    steppers in one block (`xm.optimizer_step(opt)` on TPU, `scaler.step(opt)`, `opt.step()`), the
    optimizer's own."""
    steps = [e for e in (window.step, *window.steps) if e.call is not None]
    own = [
        e for e in steps
        if e.call is not None and isinstance(e.call.func, ast.Attribute) and dotted(e.call.func.value) == e.receiver
        and module.roles.role(e.receiver) == Role.OPTIMIZER
    ]
    chosen = (own or steps)[0] if steps else None
    call = chosen.call if chosen is not None else None
    assert module.source is not None
    if call is None:
        return "the optimizer step"
    named_step = isinstance(call.func, ast.Attribute) and call.func.attr == "step"
    if chosen is not None and chosen.helper is not None and not named_step:
        # `loss_scaler(loss, opt, update_grad=...)` runs its backward every time: only its step is held
        return f"the optimizer step inside `{module.source.segment(call.func)}()`"
    return f"`{module.source.segment(call.func)}()`"


def check(facts: ModuleFacts) -> Iterator[Violation]:
    for sf in facts.scopes:
        for window in sf.windows:
            found = _dropped_window(window, sf.scope, sf.events, facts.analysed)
            if found is None:
                found = _wiped_by_calling_epoch(window, sf.events, facts)
            if found is not None:
                message, node, fix = found
                yield Violation(CODE, message, node, fix)
    yield from _handed_over(facts)
    yield from _engine_window_restarted(facts)


def _engine_window_restarted(facts: ModuleFacts) -> Iterator[Violation]:
    """`model.micro_steps = 0` before a pass over the data whose every micro-step runs
    `model.backward(loss)` and `model.step()` (a DeepSpeed engine, BEiT's `train_one_epoch`): the
    engine counts its accumulation window from that reset, so the windows start with the epoch and
    the last len % gradient_accumulation_steps micro-batches never reach an optimizer step. Report
    only, at the reset."""
    for sf in facts.scopes:
        for name, definitions in sf.scope.defs.items():
            if not name.endswith(".micro_steps"):
                continue
            engine = name[: -len(".micro_steps")]
            for reset in definitions:
                if reset.kind != "assign" or int_value(reset.value) != 0:
                    continue
                loop = _engine_pass_after(reset, engine, facts)
                if loop is None:
                    continue
                yield Violation(
                    CODE,
                    f"`{name} = 0` restarts the engine's accumulation count before each pass over the data, "
                    f"while `{engine}.step()` runs on every micro-step (line {getattr(loop.node, 'lineno', '?')}): the engine's "
                    f"windows start with the epoch, so when it accumulates (gradient_accumulation_steps > 1) the "
                    f"last len % gradient_accumulation_steps micro-batches of each epoch never reach an optimizer step",
                    reset.stmt.node,
                )


def _engine_pass_after(reset: Definition, engine: str, facts: ModuleFacts) -> Optional[Loop]:
    """The loop over data after the reset, outside it, whose micro-steps each run the engine's
    backward and step (not held by a test of the loop's counter), with no step of it after the loop."""
    scope = reset.stmt.scope
    # `micro_steps` is the engine's own count: its calls are read by name (the engine is often a
    # parameter, with no role in sight)
    calls = [(site, dotted(site.call.func)) for site in scope.calls]
    for loop in scope.loops:
        if loop.contains(reset.stmt) or reset.order > loop.header.order or not isinstance(loop.node, FOR_LOOPS):
            continue
        if loop.parent is not None and not loop.parent.contains(reset.stmt):
            continue
        if not lifetimes.over_data(loop, facts):
            continue
        steps = [s for s, f in calls if f == f"{engine}.step" and loop.contains(s.stmt) and not _held_by_counter(s.stmt, loop)]
        backwards = [s for s, f in calls if f == f"{engine}.backward" and loop.contains(s.stmt)]
        if not steps or not backwards:
            continue
        if any(f == f"{engine}.step" and s.stmt.order > loop.last_order for s, f in calls):
            continue  # stepped again after the pass
        if any(_loop_cut_by_count(loop, counter) for counter in loop.targets):
            continue  # `step = i // update_freq; if step >= steps_per_epoch: continue`: whole windows only
        return loop
    return None


def _held_by_counter(stmt: Stmt, loop: Loop) -> bool:
    """Inside an `if` that reads the loop's own counters (`if (i + 1) % k == 0:`)."""
    targets = set(loop.targets)
    return any(isinstance(node, ast.If) and names_in(node.test) & targets for node, _ in stmt.path)


def _counts_across_epochs(window: Window, scope: Scope) -> bool:
    """The `% k` gate's counter runs on across epochs: `ni = i + nb * epoch` (made from the epoch
    loop's own counter) or `global_step += 1` at every micro-step, and never set anew in the epoch
    loop outside its batch loop."""
    micro, test = window.micro_loop, window.test
    epoch = micro.parent
    name = dotted(plus_constant(test.counter)[0]) if test is not None else None  # `(ni + 1) % k`
    if epoch is None or name is None or name in micro.targets or test is None or test.flag is not None:
        return False
    definitions = scope.definitions(name)
    if any(epoch.contains(d.stmt) and not micro.contains(d.stmt) for d in definitions):
        return False  # set anew at each epoch: the count restarts with it
    inside = [d for d in definitions if micro.contains(d.stmt)]
    if not inside or not all(window.every_micro_step(d.stmt) for d in inside):
        return False
    for definition in inside:
        if definition.kind == "aug" and int_value(definition.value) == 1:
            continue
        if definition.kind == "assign" and definition.value is not None and (
            names_in(definition.value) & set(epoch.targets) and names_in(definition.value) & set(micro.targets)
        ):
            continue
        return False
    return True


def _zeroes_what_steps(zero: Event, step: Event) -> bool:
    """The zeroing acts on the optimizer the window steps: called on it, or a project helper handed
    it (`reset_gradients(optimizer)`), or a trainer's own method zeroing its own optimizer."""
    stepped = _optimizers_of(step, STEP)  # also through a step method (`self.optimizer_step()`)
    if zero.helper is None:
        return (zero.optimizer or zero.receiver) in stepped
    if zero.call is None or not stepped:
        return False
    handed = {dotted(a) for a in (*zero.call.args, *(kw.value for kw in zero.call.keywords))}
    own_method = any(name.startswith("self.") for name in stepped) and (dotted(zero.call.func) or "").startswith("self.")
    return bool(stepped & handed) or own_method


def _wiped_at_each_epoch(
    window: Window, scope: Scope, events: list[Event], source: SourceText
) -> Optional[tuple[str, ast.AST, Optional[Fix]]]:
    """A window count that runs on across epochs, either `if ni - last_opt_step >= k:` (the
    micro-steps since the last step, the mark set nowhere in the epochs but in the step block) or
    `if ni % k == 0:` with `ni = i + nb * epoch`, and the optimizer zeroed at the start of each
    epoch, before its batch loop: the micro-batches backwarded since the last step are wiped there,
    computed and never applied. Report only, at the zeroing."""
    micro, test = window.micro_loop, window.test
    epoch = micro.parent
    if epoch is None or window.form != "gate" or test is None:
        return None
    if not isinstance(micro.node, FOR_LOOPS) or _flushed_after(window, events) or _discarded_after(window, events):
        return None
    if test.since_last is None:
        if test.end_clause or not _counts_across_epochs(window, scope):
            return None
    elif any(epoch.contains(d.stmt) and not window.in_step_block(d.stmt) for d in scope.definitions(test.since_last)):
        return None  # the mark starts anew somewhere in the epochs: the windows may not carry over
    step = window.step
    zeros = [
        e for e in events
        if e.kind == ZERO and epoch.contains(e.stmt) and not micro.contains(e.stmt) and e.order < micro.header.order
        and e.stmt.runs_whenever(epoch.node) and _zeroes_what_steps(e, step)
    ]
    if not zeros:
        return None
    zero = zeros[-1]
    k_text = source.segment(window.k)
    line = getattr(window.gate, "lineno", "?")
    if test.since_last is not None:
        gated = f"the micro-steps since the last one (line {line}), a count that runs on across epochs,"
    else:
        assert window.gate is not None
        gated = f"`{source.segment(window.gate.test)}` (line {line}), and `{dotted(plus_constant(test.counter)[0])}` runs on across epochs,"
    return _wipe_message(gated, source.segment(zero.call or zero.stmt.node), "", k_text), zero.call or zero.stmt.node, None


def _wipe_message(gated: str, zeroing: str, before_batches: str, k_text: str) -> str:
    return (
        f"the step is gated on {gated} but `{zeroing}` at the start of each epoch{before_batches} wipes "
        f"the gradients backwarded since that step: up to {k_text} - 1 micro-batches of each epoch are "
        f"computed and never applied, and the next epoch's first window is short by as many"
    )


def _optimizers_of(event: Event, kind) -> set[str]:
    """The optimizers an event acts on: its own, or those of the `kind` events inside the function
    it calls (`self.update_optimizer()` stepping `self.optimizer`)."""
    if event.callee is None:
        return {name for name in (event.optimizer, event.receiver) if name}
    return {name for found in reached(event, kind) for name in (found.event.optimizer, found.event.receiver) if name}


def _epoch_loop_calling(method: Scope, facts: ModuleFacts) -> Optional[tuple[Loop, Stmt, list[Event]]]:
    """A trainer's epoch loop in another method of the class that calls `method` (which holds the
    batch loop) on every pass (`for self.epoch in ...: self.before_epoch(); self.train_one_epoch()`):
    the loop, the calling statement and that method's events."""
    if method.class_node is None and not method.class_scopes:
        return None
    for sf in facts.scopes:
        if sf.scope is method or not any(sf.scope is other for other in method.class_scopes):
            continue
        for site in sf.scope.calls:
            if dotted(site.call.func) != f"self.{method.name}" or not site.stmt.loops:
                continue
            epoch = site.stmt.loops[-1]
            if isinstance(epoch.node, FOR_LOOPS) and site.stmt.runs_whenever(epoch.node):
                return epoch, site.stmt, sf.events
    return None


def _methods_called_in(loop: Loop, depth: int = 2) -> set[str]:
    """The names of the object's own methods called in the loop, and in those, `depth` calls down."""
    names: set[str] = set()
    scopes = [loop.scope]
    for level in range(depth):
        found: set[str] = set()
        for scope in scopes:
            for site in scope.calls:
                func = site.call.func
                if isinstance(func, ast.Attribute) and dotted(func.value) == "self" and (level or loop.contains(site.stmt)):
                    found.add(func.attr)
        names |= found
        scopes = [s for s in loop.scope.class_scopes if s.name in found]
    return names


def _wiped_by_calling_epoch(
    window: Window, events: list[Event], facts: ModuleFacts
) -> Optional[tuple[str, ast.AST, Optional[Fix]]]:
    """The trainer form of `_wiped_at_each_epoch`: the batch loop is a method (`train_one_epoch`)
    whose window counts the micro-steps since the last step (`curr_step - self.last_opt_step >=
    self.accumulate`), called once per epoch from another method whose epoch loop first zeroes the
    same optimizer (`self.before_epoch()` running `self.optimizer.zero_grad()`). The mark must be
    set only by the step itself and outside the epochs. Report only, at the zeroing's call."""
    micro, test = window.micro_loop, window.test
    if micro.parent is not None or test is None or test.since_last is None or not isinstance(micro.node, FOR_LOOPS):
        return None
    if _flushed_after(window, events) or _discarded_after(window, events):
        return None
    found = _epoch_loop_calling(micro.scope, facts)
    if found is None:
        return None
    epoch, call_stmt, epoch_events = found
    counter = dotted(plus_constant(test.counter)[0])
    each_epoch = _methods_called_in(epoch) - {micro.scope.name}
    for scope in micro.scope.binding_scopes(test.since_last):
        for definition in scope.definitions(test.since_last):
            value = definition.value
            if definition.kind == "assign" and value is not None and dotted(plus_constant(value)[0]) == counter:
                continue  # the step's own mark
            if scope is epoch.scope and epoch.contains(definition.stmt) or scope is micro.scope or scope.name in each_epoch:
                return None  # set anew in the epochs: the window may not carry over
    stepped = _optimizers_of(window.step, STEP)
    zeros = [
        e for e in epoch_events
        if e.kind == ZERO and epoch.contains(e.stmt) and e.order < call_stmt.order
        and e.stmt.runs_whenever(epoch.node) and _optimizers_of(e, ZERO) & stepped
    ]
    if not zeros:
        return None
    zero = zeros[-1]
    message = _wipe_message(
        "the micro-steps since the last one, a count that runs on across epochs,",
        facts.source.segment(zero.call or zero.stmt.node), f" (before `{micro.scope.name}()` runs the batches)",
        facts.source.segment(window.k),
    )
    return message, zero.call or zero.stmt.node, None


def _dropped_window(
    window: Window, scope: Scope, events: list[Event], module: AnalysedModule
) -> Optional[tuple[str, ast.AST, Optional[Fix]]]:
    """The finding's message, node and fix when the window's last micro-batches of each epoch
    never reach the step, read in the module that holds the loop."""
    source, roles = module.source, module.roles
    assert source is not None
    if window.form == "inner" or window.test is None or window.test.end_clause:
        return None
    wiped = _wiped_at_each_epoch(window, scope, events, source)
    if wiped is not None or window.test.since_last is not None:
        # a count since the last step: whether it carries into the next epoch depends on where it
        # is reset, so only what the epoch does to the gradients in between is read
        return wiped
    if window.form == "callee" and window.passed_test is None and window.bound_test is None:
        return None  # the test is the called function's own: its counter is not the loop's in sight
    if window.reporting_gate:
        return None  # a logging frequency holds the step: a misplaced step block (ACC001/ACC012), no window
    if roles.role(window.step.receiver) == Role.ENGINE or _one_outside_framework(window, scope):
        return None  # a DeepSpeed engine keeps its own accumulation boundary: not in sight here
    counted = _epoch_counter(window, module.resolver)
    hand = hand_epoch_count(window, module.resolver) if counted is None else None
    if hand is not None:
        counted = (hand.name, hand.start, None)
        if hand.loop is not window.micro_loop:  # a trainer's step method: read its caller's loop
            events = module.windows_of(hand.loop.scope)[0]
            window = dataclasses.replace(window, micro_loop=hand.loop, step_loop=hand.loop)
    restarted = _restarted_count(window)
    if counted is None and restarted is not None and _passes_over_data(window, module.resolver):
        # `for batch in loader:` with no count of its own: the window's count, set to 0 before
        # each pass, is what leaves the tail over (no end-of-data test to offer without a count)
        counted = (restarted, 0, None)
    if counted is None or window.test is None:
        return None
    counter, start, sized = counted
    if (not names_in(window.test.counter) & _counter_names(window, counter) and restarted is None) \
            or _flushed_after(window, events):
        return None
    if _discarded_after(window, events) or _cut_by_count(window, counter) or _sized_in_steps(sized, scope):
        return None
    gate = window.gate
    # the caller's text of the test, or the step method's own test read at the call
    tested = gate.test if gate is not None else window.passed_test or window.bound_test
    if tested is None:
        return None
    read_at_call = tested is window.bound_test
    called = window.step.call
    if read_at_call and called is None:
        return None
    k_text = ast.unparse(window.k) if read_at_call else source.segment(window.k)
    tested_text = ast.unparse(tested) if read_at_call else source.segment(tested)
    fix = None
    off_by_one = _off_by_one(window, start, tested)
    stepped = _step_text(window, module)
    short = window.test.short_epoch_clause
    if (
        short is None  # the gate is more than its `% k` test: report only
        and gate is not None and window.form == "gate" and window.test.flag is None and sized is not None
        and has_len(sized, scope, module.collected) and not _gated_elsewhere(window, source)
    ):
        sized_text = source.segment(sized)
        end = f"{counter} + 1 == len({sized_text})" if start == 0 else (
            f"{counter} == len({sized_text})" if start == 1 else f"{counter} - {start - 1} == len({sized_text})"
        )
        if not off_by_one:
            new_test = f"{operand(source, gate.test, OR)} or {end}"
            edit = replace(source, gate.test, new_test)
            fix = Fix(f"Also step when the data ends: `or {end}`", "safe", (edit,))
        elif isinstance(gate.test, (ast.Compare, ast.UnaryOp)):  # the whole test is the `% k` check
            boundary = f"({counter} + 1) % {operand(source, window.k, MUL + 1)} == 0"
            edit = replace(source, gate.test, f"{boundary} or {end}")
            fix = Fix(f"Step at the end of each window and of the data: `{boundary} or {end}`", "safe", (edit,))
    if hand is not None and not off_by_one:
        message = (
            f"the step is gated on `{tested_text}`, a count of the epoch's batches that starts again "
            f"from 0 with each epoch, with no end-of-data clause and no step after the loop: the last "
            f"len % {k_text} batches of each epoch never reach {stepped} in their epoch{_leftover(window, events)}"
        )
    elif restarted is not None:
        message = (
            f"the step is gated on `{tested_text}`, a count set to 0 before the loop and again at "
            f"each step, with no end-of-data clause and no step after the loop: the last len % {k_text} "
            f"batches of each epoch never reach {stepped} in their epoch{_leftover(window, events)}"
        )
    elif off_by_one:
        first = (
            f"batch 0 is left out, so the first window holds {k_text} + 1 batches"
            if _skips_batch_zero(tested, window.test.counter, dotted(window.k))
            else "it fires after the first batch alone (a one-batch first window)"
        )
        message = (
            f"the step is gated on `{tested_text}` with `{counter}` counted from 0: "
            f"{first}, and the last "
            f"(len - 1) % {k_text} batches of each epoch never reach {stepped} in their epoch"
            f"{_leftover(window, events)}"
        )
    elif window.micro_loop.implicit:
        message = (
            f"the step is gated on `% {k_text}` with no `or self.trainer.is_last_batch`: the last "
            f"len % {k_text} batches of each epoch never reach {stepped}"
        )
    elif short is not None:
        message = (
            f"the step is gated on `% {k_text}` and its end-of-data clause `{' '.join(source.segment(short).split())}` "
            f"fires only when an epoch is shorter than one window: for longer epochs the last "
            f"len % {k_text} batches never reach {stepped} in their epoch{_leftover(window, events)}"
        )
    elif read_at_call and called is not None:
        message = (
            f"`{source.segment(called.func)}()` steps only when `{tested_text}`, with no end-of-data "
            f"clause and no step after the loop: the last {_tail(window, start, k_text, tested)} batches of each "
            f"epoch never reach the optimizer step in their epoch{_short_first_window(window, start, tested)}"
            f"{_leftover(window, events)}"
        )
    else:
        message = (
            f"the step is gated on `% {k_text}` with no end-of-data clause and no step after the loop: "
            f"the last {_tail(window, start, k_text, tested)} batches of each epoch never reach {stepped} in their "
            f"epoch{_short_first_window(window, start, tested)}{_leftover(window, events)}"
        )
    node: ast.AST = called if read_at_call and called is not None else gate if gate is not None else tested
    return message, node, fix


def _counter_names(window: Window, counter: str) -> set[str]:
    """The loop's counter; for a step method's own test also `self.batch_idx` when the loop body
    sets `self.batch_idx = batch_idx` on every iteration before the call."""
    names = {counter}
    node = window.micro_loop.node
    if window.form != "callee" or not isinstance(node, FOR_LOOPS):
        return names
    call_line = getattr(window.step.stmt.node, "lineno", 0)
    for stmt in node.body:
        if stmt.lineno >= call_line:
            break
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name) \
                and stmt.value.id == counter:
            target = dotted(stmt.targets[0])
            if target is not None and target.startswith("self."):
                names.add(target)
    return names


def _handed_over(facts: ModuleFacts) -> Iterator[Violation]:
    """A loop in a project function that steps through an object the caller hands it, of a
    project class the function's own module does not show (`train_one_epoch(..., loss_scaler)`
    with `loss_scaler = NativeScaler()` here, whose `__call__` steps when `update_grad=` says):
    read as this call runs it, and reported here, where the object is made, with no fix (the
    gate is in the other function). A window the function's own reading finds is its own
    module's finding."""
    resolver = facts.analysed.resolver
    seen: set[int] = set()
    for sf in facts.scopes:
        known: dict[str, bool] = {}  # one answer per argument text in a function (most repeat)
        for site in sf.scope.calls:
            if not any(
                _project_object(argument, sf.scope, resolver, known)
                for argument in [*site.call.args, *(kw.value for kw in site.call.keywords)]
            ):
                continue  # no project object handed over: the callee reads as its own module reads it
            callee = resolver.resolve(site.call, sf.scope)
            if callee is None or callee.scope is sf.scope or callee.module.source is None:
                continue
            bound = bound_arguments(site.call, callee)
            classes = instance_classes(bound, site, callee, resolver) if bound is not None else {}
            if not classes:
                continue
            own = {id(w.micro_loop.node) for w in callee.module.windows_of(callee.scope)[1]}
            events, windows = callee.module.windows_handed(callee.scope, classes)
            for window in windows:
                if id(window.micro_loop.node) in own or id(window.micro_loop.node) in seen:
                    continue
                found = _dropped_window(window, callee.scope, events, callee.module)
                if found is None:
                    continue
                seen.add(id(window.micro_loop.node))
                message, node, _ = found
                yield Violation(
                    CODE,
                    f"`{callee.scope.name}()` ({place_in(callee.module, node)}) steps through the "
                    f"{_handed_text(classes, window)} handed to it here: {message}",
                    site.call,
                )


def _project_object(argument: ast.expr, scope: Scope, resolver: Resolver, known: dict[str, bool]) -> bool:
    """An argument that is an object of a project class: built in the call (`Scaler()`), or a
    name built by a call in sight (`loss_scaler = NativeScaler()`)."""
    if isinstance(argument, ast.Call):
        built = dotted(argument.func)
        if not class_like(built) or built is None:
            return False
        key = built + "()"
        if key not in known:
            known[key] = resolver.built_class(argument, scope) is not None
        return known[key]
    name = dotted(argument)
    if name is None:
        return False
    if name not in known:
        known[name] = _made_by_a_call(name, scope) and resolver.instance_class(name, scope) is not None
    return known[name]


def _made_by_a_call(name: str, scope: Scope) -> bool:
    """`name = Cls(...)` in this function or one around it, or `self.name = Cls(...)` in a method
    of its class: a cheap look before asking which class the object is (most arguments are
    parameters or data)."""
    return any(
        d.kind == "assign" and isinstance(d.value, ast.Call)
        for s in scope.binding_scopes(name)
        for d in s.definitions(name)
    )


def _handed_text(classes: dict[str, str], window: Window) -> str:
    """The handed objects the step goes through (`loss_scaler(...)`), not the others (a logger)."""
    call = window.step.call
    head = (dotted(call.func) or "").partition(".")[0] if call is not None else ""
    stepping = [param for param in classes if param == head] or sorted(classes)
    return " and ".join(f"`{param}`" for param in stepping)
