"""Accumulation windows: where the optimizer step is gated to run once every k micro-steps,
and which statements run every micro-step versus once per window."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Optional, cast

import ast
import re

from accumlint.analysis.calls import Callee, bind_arguments, enclosing_class
from accumlint.analysis.collect import FOR_LOOPS, Collected, Definition, Loop, Scope, Stmt
from accumlint.analysis.events import BACKWARD, STEP, Event
from accumlint.analysis.dataflow import reaching
from accumlint.analysis.entries import over_micro_batches
from accumlint.analysis.pinned import k_is_one_on_way
from accumlint.analysis.exprs import dotted, int_value, is_constant, is_string, method_of, name_equals, names_in, ordered, plus_constant, positional, positionals
from accumlint.frameworks import Framework


@dataclass(frozen=True)
class GateTest:
    k: ast.expr
    counter: ast.expr
    positive: bool  # True: the test holds at the window's end
    end_clause: bool  # `or i + 1 == len(loader)`: it also fires when the data ends
    flag: Optional[str] = None  # the test was computed earlier into this name
    # `or (len(loader) <= k and i + 1 == len(loader))`: it flushes only epochs shorter than one window
    short_epoch_clause: Optional[ast.expr] = None
    # `ni - last_opt_step >= k` with `last_opt_step = ni` (YOLO): k micro-steps since the last
    # step, counted by this name; whether a window carries across epochs depends on where it is reset
    since_last: Optional[str] = None
    # `n += 1` every micro-step and `if n == k: ...; n = 0`: a window counted by hand
    hand_counted: bool = False


@dataclass(eq=False, repr=False)
class Window:
    # "gate" (if-block), "continue" (early continue), "inner" (micro-step loop), "callee" (the
    # step's call runs every micro-step; the function it calls steps under its own gate)
    form: str
    micro_loop: Loop  # one iteration of it is one micro-step
    step_loop: Loop  # the loop whose body holds the step
    k: ast.expr
    k_names: set[str]
    step: Event
    gate: Optional[ast.If] = None
    gate_header: Optional[Stmt] = None
    test: Optional[GateTest] = None
    branch: Optional[str] = None  # branch of `gate` that holds the step
    steps: list[Event] = field(default_factory=list)
    siblings: list["Window"] = field(default_factory=list)  # other gates of the same loop
    skips: list[Stmt] = field(default_factory=list)  # `if not boundary: continue` headers
    # "callee" form: the caller's expression that the callee tests (`update_grad=(i + 1) % k == 0`)
    passed_test: Optional[ast.expr] = None
    # "callee" form: the callee's whole test read at the call, its parameters replaced by the
    # call's arguments (a copy that mixes two sources' positions: read it with ast.unparse)
    bound_test: Optional[ast.expr] = None
    # steps in the micro-loop outside every step block (an extra update in an inner `while`)
    other_steps: list[Event] = field(default_factory=list)
    # backward statements on both branches of the gate (`if boundary: backward; step` / `else:
    # backward`, apex's `delay_unscale` form): together they run on every micro-step
    paired: set[int] = field(default_factory=set)

    def _own_block(self, stmt: Stmt) -> bool:
        if self.form == "gate":
            return self.gate is not None and stmt.within(self.gate, self.branch)
        if self.form == "continue":
            return (
                self.gate is not None
                and self.gate_header is not None
                and self.step_loop.contains(stmt)
                and stmt.order > self.gate_header.order
                and not stmt.within(self.gate)
            )
        if self.form == "callee":
            return stmt is self.step.stmt
        return (
            self.step_loop.contains(stmt)
            and not self.micro_loop.contains(stmt)
            and stmt.order > self.micro_loop.last_order
        )

    def backward_in_call(self, event: Event) -> bool:
        """The called step function runs the backward itself, outside its gate (`loss_scaler(loss,
        opt, update_grad=...)`): a backward of every micro-step."""
        if self.form != "callee" or event.stmt is not self.step.stmt or event.callee is None:
            return False
        inside = [e for e in event.callee.module.direct.get(id(event.callee.scope), []) if e.kind == BACKWARD]
        tests = [[node for node, _ in e.stmt.path if isinstance(node, ast.If)] for e in inside]
        if any(not found for found in tests):
            return True
        # `if update: loss.backward(); step()` / `else: loss.backward()`, the function's only test:
        # one of them runs on every call
        return any(len(found) == 1 and _branches_running(found[0], inside) == {"body", "orelse"} for found in tests)

    def in_step_block(self, stmt: Stmt) -> bool:
        return self._own_block(stmt)

    @property
    def reporting_gate(self) -> bool:
        """The modulus reads as a logging, progress-bar, evaluation or checkpoint frequency, not
        as accumulation steps: a step under it is a misplaced step block, not a window."""
        return reporting_frequency(self.k)

    def accumulates(self, events: list[Event]) -> bool:
        """An accumulation window: a backward on every micro-step, no logging-frequency gate, and
        no other update on every micro-step (a GAN's second optimizer)."""
        if self.reporting_gate or self.other_steps:
            return False
        return any(e.kind == BACKWARD and self.every_micro_step(e.stmt) for e in events)

    def every_micro_step(self, stmt: Stmt) -> bool:
        """Runs on every micro-step of this window: not in any gate's block, not after an early
        `continue` on a non-boundary micro-step, not on a branch that excludes this window's step
        (an AMP path versus a plain path)."""
        if id(stmt) in self.paired and self.gate_header is not None:
            return self.every_micro_step(self.gate_header)  # one of the pair runs whenever the gate's `if` does
        if not self.micro_loop.contains(stmt) or not stmt.compatible(self.step.stmt):
            return False
        for header in self.skips:
            if header.order < stmt.order and not stmt.within(header.node):
                return False
        for window in (self, *self.siblings):
            if window._own_block(stmt) or (window.gate is not None and stmt.within(window.gate)):
                return False
        if any(e.stmt.path == stmt.path for e in self.other_steps):
            return False  # `backward(); optimizer.step(); zero_grad()` in one block: an update of its own, not the window's
        if self._in_handler_in_loop(stmt):
            return False  # `except StopIteration:` (the data restarts): runs when something fails, not every micro-step
        return not (
            self._once_per_loop(stmt) or k_is_one_on_way(stmt, self.k, self.micro_loop.scope)
            or self._gated_once_per_window(stmt) or self._flag_gated(stmt) or self._periodic(stmt)
        )

    def _inside_the_loop(self, stmt: Stmt) -> Iterator[tuple[ast.AST, str]]:
        """The blocks around `stmt` from the micro-loop inwards (all of them in a function called
        once per micro-step, whose body is the loop's)."""
        if self.micro_loop.implicit:
            yield from stmt.path
        else:
            yield from stmt.blocks_inside(self.micro_loop.node) or ()

    def _under_test_in_loop(self, stmt: Stmt, holds: Callable[[ast.expr], bool]) -> bool:
        """In the body of an `if`, inside the micro-loop, whose test `holds`."""
        return any(
            isinstance(node, ast.If) and branch == "body" and holds(node.test)
            for node, branch in self._inside_the_loop(stmt)
        )

    def _in_handler_in_loop(self, stmt: Stmt) -> bool:
        """In an `except` clause inside the micro-loop."""
        return any(isinstance(node, ast.ExceptHandler) for node, _ in self._inside_the_loop(stmt))

    def _once_per_loop(self, stmt: Stmt) -> bool:
        """In the block of `if step == 0:` (the micro-loop's own index, or the counter the window's
        gate reads, equal to a number, alone or in an `and`, `epoch == 0 and step == 0`; in a step
        method called per batch, `if self.task_iteration == 0:` beside the gate `if
        self.task_iteration % k == 0:`): runs on one micro-step of the loop, not on every one."""
        targets = set(self.micro_loop.targets)
        counter = dotted(self.test.counter) if self.test is not None else None
        if counter is not None:
            targets.add(counter)

        def first_only(test: ast.expr) -> bool:
            parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            return any(_index_is_number(part, targets) for part in parts)

        return self._under_test_in_loop(stmt, first_only)

    def _periodic(self, stmt: Stmt) -> bool:
        """In the block of another `% n` test (`if batch_idx % 100 == 0:`): runs every `n`
        micro-steps, not every one."""
        return self._under_test_in_loop(
            stmt, lambda test: any(isinstance(part, ast.BinOp) and isinstance(part.op, ast.Mod) for part in ast.walk(test))
        )

    def _flag_gated(self, stmt: Stmt) -> bool:
        """Under `if should_start_update:`, a flag the loop itself sets to True or False (cleared
        once the block has run, set again at the step): how often the block runs is the loop's
        bookkeeping, not shown to be every micro-step."""
        scope = self.micro_loop.scope
        for node, _ in stmt.path:
            if not isinstance(node, ast.If):
                continue
            test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) else node.test
            name = dotted(test)
            if name is None:
                continue
            for definition in scope.definitions(name):
                value = definition.value
                if (
                    definition.kind == "assign" and isinstance(value, ast.Constant) and isinstance(value.value, bool)
                    and self.micro_loop.contains(definition.stmt)
                ):
                    return True
        return False

    def _gated_once_per_window(self, stmt: Stmt) -> bool:
        """Inside another `if` on the same `% k` boundary (`if i % k == 0: zero_grad()` at the
        start of each window): runs once per window too."""
        k = dotted(self.k)
        if k is None:
            return False
        scope = self.micro_loop.scope
        for node, branch in stmt.path:
            if isinstance(node, ast.If):
                if branch == "orelse" and isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And):
                    continue  # `else:` of `if (i + 1) % k != 0 and distributed:` runs every step of one process
                test = parse_gate(node.test, scope, stmt.order)
                if test is not None and dotted(test.k) == k and test.positive == (branch == "body"):
                    return True
        return False


def _modes_apart(stmt: Stmt, other: Stmt, loop: Loop, scope: Scope) -> bool:
    """The two sit on different branches of an `if` whose test the loop never changes, a mode
    chosen once (`if cur_batch >= cfg.GLOBAL_BATCH_SIZE:` step every batch, `else:` accumulate):
    a run takes one branch only, so the windows of the accumulating one stand."""
    branches = {id(node): branch for node, branch in stmt.path}
    for node, branch in other.path:
        if id(node) not in branches or branches[id(node)] == branch:
            continue
        if not isinstance(node, ast.If) or any(isinstance(part, ast.Call) for part in ast.walk(node.test)):
            return False
        names = names_in(node.test)
        return bool(names) and all(_set_before(name, loop, scope) for name in names)
    return False


def _set_before(name: str, loop: Loop, scope: Scope) -> bool:
    """A name the loop reads but never sets: a local bound only before it, or a setting's
    attribute (`cfg.GLOBAL_BATCH_SIZE`) whose object is not rebound in it. Not the loop's own
    targets, nor `self.` attributes, which other methods may move between calls."""
    root = name.split(".")[0]
    if root in {"self", "cls"} or root in loop.targets or name in loop.targets:
        return False
    for candidate in {name, root}:
        for definition in scope.definitions(candidate):
            if loop.contains(definition.stmt) or definition.stmt.order > loop.header.order:
                return False
    return "." in name or bool(scope.definitions(name)) or name in scope.params


def _index_is_number(test: ast.expr, targets: set[str]) -> bool:
    """`step == 0`, `0 == i`: a loop index compared for equality with a number."""
    compared = name_equals(test)
    return compared is not None and compared[0] in targets


def _modulo(expr: ast.expr) -> Optional[ast.BinOp]:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        if is_string(expr.left):
            return None  # string formatting, not arithmetic
        k = int_value(expr.right)
        if k is not None and k <= 1:
            return None
        if _data_size(expr.left):
            return None  # `X.size(0) % world_size`: a batch that does not split evenly, not a count of micro-steps
        return expr
    return None


def _data_size(expr: ast.expr) -> bool:
    """The size of a tensor, not a count of micro-steps: `x.size(0)`, `x.shape[0]`, `x.numel()`."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute):
        return expr.value.attr == "shape"
    if isinstance(expr, ast.Call):
        receiver, method = method_of(expr)
        return receiver is not None and method in {"size", "numel"}
    return False


def _is_len(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and dotted(expr.func) == "len"


def _epoch_length(expr: ast.expr, scope: Scope, at: int) -> bool:
    """`len(loader)`, or a name holding it (`steps_in_epoch = len(epoch_iterator)`, also as one
    branch of `len(it) if sized else max_steps * k`)."""
    if _is_len(expr):
        return True
    if isinstance(expr, ast.Name):
        value = _flag_value(expr.id, scope, at)
        if isinstance(value, ast.IfExp):
            return _is_len(value.body) or _is_len(value.orelse)
        return value is not None and _is_len(value)
    return False


def _shorter_than_a_window(clause: ast.expr, k: ast.expr, scope: Scope, at: int) -> bool:
    """`len(loader) <= k and i + 1 == len(loader)` (HF's legacy scripts and Trainer, the length
    also held in a name): an end-of-data test that holds only when the whole epoch is shorter
    than one window."""
    if not (isinstance(clause, ast.BoolOp) and isinstance(clause.op, ast.And)):
        return False
    k_text = ast.dump(k)
    for value in clause.values:
        sides = ordered(value)
        if sides is not None:
            larger, smaller = sides
            if ast.dump(larger) == k_text and _epoch_length(smaller, scope, at):
                return True
    return False


def _flag_value(name: str, scope: Scope, before: int) -> Optional[ast.expr]:
    reaching = [d for d in scope.definitions(name) if d.kind == "assign" and d.order < before]
    return reaching[-1].value if reaching else None


# What a call to a helper returns, read as a gate at the call site (see accumlint.analysis.calls.gate_of).
HelperGates = Callable[[ast.Call, Scope], Optional[ast.expr]]


def parse_gate(
    test: ast.expr, scope: Scope, at: int, depth: int = 0, helpers: Optional[HelperGates] = None
) -> Optional[GateTest]:
    """Read `(i + 1) % k == 0`, `step % k == k - 1`, `not (i + 1) % k`, `(i + 1) % k != 0`,
    `... or i + 1 == len(loader)` and flags assigned from such tests."""
    if depth > 4:
        return None
    if isinstance(test, ast.BoolOp):
        parsed = [parse_gate(value, scope, at, depth + 1, helpers) for value in test.values]
        gates = [g for g in parsed if g is not None]
        if len(gates) != 1:
            return None
        gate = gates[0]
        if isinstance(test.op, ast.Or):
            if not gate.positive:
                return None
            others = [value for value, parsed_gate in zip(test.values, parsed) if parsed_gate is None]
            if others and all(_shorter_than_a_window(value, gate.k, scope, at) for value in others):
                return replace(gate, short_epoch_clause=others[0])
            return replace(gate, end_clause=True)
        # `(i + 1) % k != 0 and i + 1 != len(loader)`: "not at a boundary and not at the end".
        return gate if gate.positive else replace(gate, end_clause=True)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated = parse_gate(test.operand, scope, at, depth + 1, helpers)
        if negated is None:
            return None
        # `not (gate or end)` is "neither at a boundary nor at the end": still a negative gate.
        return replace(negated, positive=not negated.positive)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        since = _since_last_step(test, scope)
        if since is not None:
            return since
        modulo = _modulo(test.left) or _modulo(test.comparators[0])
        if modulo is None:
            return _last_window_index(test)
        if isinstance(test.ops[0], ast.Eq):
            return GateTest(modulo.right, modulo.left, True, False)
        if isinstance(test.ops[0], ast.NotEq):
            return GateTest(modulo.right, modulo.left, False, False)
        return None
    modulo = _modulo(test)
    if modulo is not None:  # truthy remainder: not at the window's end
        return GateTest(modulo.right, modulo.left, False, False)
    runner_gate = _runner_iteration_gate(test)
    if runner_gate is not None:
        return runner_gate
    if isinstance(test, ast.Call) and helpers is not None:  # `if self.is_update_step(i):`
        returned = helpers(test, scope)
        return parse_gate(returned, scope, at, depth + 1, helpers) if returned is not None else None
    if isinstance(test, ast.Name):
        value = _flag_value(test.id, scope, at)
        if value is not None:
            flagged = parse_gate(value, scope, at, depth + 1, helpers)
            if flagged is None and isinstance(value, ast.Constant) and isinstance(value.value, bool):
                flagged = _switched_flag(test.id, scope, at, depth, helpers)
            return replace(flagged, flag=test.id) if flagged is not None else None
    return None


# OpenMMLab hooks' `self.every_n_iters(runner, n)`: `(runner.iter + 1) % n == 0`; the inner
# count restarts with each epoch.
_RUNNER_COUNTS = {"every_n_iters": "iter", "every_n_train_iters": "iter", "every_n_inner_iters": "inner_iter"}


def _runner_iteration_gate(test: ast.expr) -> Optional[GateTest]:
    """`self.every_n_iters(runner, self.update_interval)` in an mmcv/mmengine hook: a window of
    `update_interval` iterations of the runner, ending where the test holds."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and len(test.args) == 2):
        return None
    count = _RUNNER_COUNTS.get(test.func.attr)
    if count is None or not isinstance(test.func.value, ast.Name) or test.func.value.id != "self":
        return None
    runner = test.args[0]
    counter = ast.BinOp(ast.Attribute(runner, count, ast.Load()), ast.Add(), ast.Constant(1))
    return GateTest(test.args[1], ast.copy_location(counter, test), True, False)


def _switched_flag(
    name: str, scope: Scope, at: int, depth: int, helpers: Optional[HelperGates]
) -> Optional[GateTest]:
    """`update = True` / `if k > 1:` / `if i == 0: update = False` / `elif i % k == 0 or last:
    update = True` / `else: update = False`: a flag set to constants whose every True, once k is
    above 1, sits under a window test: the gate is that test. A True set before the `if` on k, the
    default of a run without accumulation, is overwritten on every way through it."""
    definitions = [d for d in scope.definitions(name) if d.order < at]
    values = {id(d): d.value.value for d in definitions if d.kind == "assign" and isinstance(d.value, ast.Constant)}
    if not definitions or len(values) != len(definitions) or not all(isinstance(v, bool) for v in values.values()):
        return None
    gates: list[GateTest] = []
    defaults = []
    for definition in (d for d in definitions if values[id(d)] is True):
        gate = None
        for node, branch in reversed(definition.stmt.path):
            if isinstance(node, ast.If) and branch == "body":
                gate = parse_gate(node.test, scope, definition.order, depth + 1, helpers)
                break
        if gate is not None and gate.positive:
            gates.append(gate)
        else:
            defaults.append(definition)
    if len(gates) != 1:
        return None
    overwritten = any(value is False for value in values.values())
    for default in defaults:
        # the default must be followed, on the same path, by an `if` on k whose branches set the flag
        later = [d for d in definitions if d.order > default.order and d.stmt.path[: len(default.stmt.path)] == default.stmt.path]
        if not later or not overwritten:
            return None
        first_if = next((node for node, _ in later[0].stmt.path[len(default.stmt.path):] if isinstance(node, ast.If)), None)
        if first_if is None or not names_in(first_if.test) & names_in(gates[0].k):
            return None
    return gates[0]


def _last_window_index(test: ast.Compare) -> Optional[GateTest]:
    """`if meta["grad_accum_index"] == args.grad_accum_steps - 1:`: an index within the window,
    computed elsewhere (a data generator), compared with its last value. Both names must speak
    of the window, or any `i == n - 1` (the last batch, the last epoch) would read as a gate."""
    if not isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        return None
    for index, last in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if not (isinstance(last, ast.BinOp) and isinstance(last.op, ast.Sub) and int_value(last.right) == 1):
            continue
        k = last.left
        index_words = _words(index)
        if int_value(k) is not None or not _words(k) & _WINDOW_WORDS or not index_words & _WINDOW_WORDS:
            continue
        if not index_words & {"index", "idx"}:
            continue
        return GateTest(k, index, isinstance(test.ops[0], ast.Eq), False)
    return None


def _since_last_step(test: ast.Compare, scope: Scope) -> Optional[GateTest]:
    """`ni - last_opt_step >= k`, where `last_opt_step = ni` in the step block, or
    `batch_id - start_id + 1 == k`, where `start_id = batch_id + 1`: the micro-steps since the last
    step, counted from a mark the step block sets (the same offset on both sides)."""
    if not isinstance(test.ops[0], (ast.GtE, ast.Eq)):
        return None
    difference, offset = plus_constant(test.left)
    if not isinstance(difference, ast.BinOp) or not isinstance(difference.op, ast.Sub):
        return None
    counted, inner_offset = plus_constant(difference.left)
    offset += inner_offset
    k = test.comparators[0]
    counter, last = dotted(counted), dotted(difference.right)
    literal = int_value(k)
    if counter is None or last is None or (literal is not None and literal <= 1):
        return None

    def marks_the_step(definition: Definition) -> bool:
        if definition.kind != "assign" or definition.value is None:
            return False
        marked, mark_offset = plus_constant(definition.value)
        return dotted(marked) == counter and mark_offset == offset

    if not any(marks_the_step(d) for s in scope.sight() for d in s.definitions(last)):
        return None
    return GateTest(k, counted, True, False, since_last=last)


def _ends_with_continue(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Continue)


def _prefixed(name: str, prefix: str) -> Optional[str]:
    """The rest of `name` after `prefix` (`cfg.train.k`, `cfg` -> `.train.k`), or None."""
    return name[len(prefix):] if name.startswith(prefix + ".") else None


def _handed_in(param: str, function: Scope) -> set[str]:
    """What the calls of `function` in this module pass for `param`, where it is a name
    (`Trainer(model, opt, args.accum)` for `__init__(self, model, opt, k)`)."""
    module = _module_node(function)
    if module is None or param not in function.params or not isinstance(function.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    index = function.params.index(param)
    if function.class_node is not None:
        if function.params[:1] != ["self"] or index == 0:
            return set()
        index -= 1
        callee = function.class_node.name if function.name == "__init__" else f"self.{function.name}"
    elif function.parent is not None and function.parent.parent is None:
        callee = function.name
    else:
        return set()
    passed: set[str] = set()
    calls = _calls_by_name(module)
    candidates = calls.get(callee, []) + (calls.get("." + callee, []) if function.name == "__init__" else [])
    for node in candidates:
        if any(isinstance(arg, ast.Starred) for arg in node.args[: index + 1]):
            continue
        value = node.args[index] if index < len(node.args) else next(
            (kw.value for kw in node.keywords if kw.arg == param), None
        )
        name = dotted(value)
        if name is not None:
            passed.add(name)
    return passed


def _getattr_name(value: Optional[ast.expr]) -> Optional[str]:
    """`getattr(cfg, "grad_accum", 1)` reads `cfg.grad_accum`."""
    if not (isinstance(value, ast.Call) and dotted(value.func) == "getattr" and len(value.args) in {2, 3}):
        return None
    owner, attr = dotted(value.args[0]), value.args[1]
    if owner is None or not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
        return None
    return f"{owner}.{attr.value}"


@dataclass(frozen=True)
class _Alias:
    """One definition that may make two names one value, read once per scope: a parameter (of
    `param_of`), `target = source` with `source` a dotted name (or `getattr(obj, "attr", d)`), or
    `target = Ctor(arg=given, ...)` (`keywords`)."""

    target: str
    source: Optional[str] = None
    keywords: tuple[tuple[str, str], ...] = ()
    param_of: Optional[Scope] = None


# Both caches hold one checked module's analysis (and the modules it reaches); `begin_analysis`
# empties them as the next one starts.
_ALIASES: dict[int, tuple[Scope, list[_Alias]]] = {}
_CALL_INDEX: dict[int, tuple[ast.Module, dict[str, list[ast.Call]]]] = {}


def end_analysis() -> None:
    """Forget the last module's scopes and calls."""
    _ALIASES.clear()
    _CALL_INDEX.clear()


def begin_analysis(collected: Collected) -> None:
    """Forget the last module's scopes and calls; index this one's calls from the collected call
    sites (no second walk of the tree)."""
    end_analysis()
    _index_calls(collected.module, (site.call for scope in collected.scopes for site in scope.calls))


def _alias_definitions(scope: Scope) -> list[_Alias]:
    known = _ALIASES.get(id(scope))
    if known is not None and known[0] is scope:
        return known[1]
    found: list[_Alias] = []
    for target, definitions in scope.defs.items():
        for definition in definitions:
            value = definition.value
            if definition.kind == "param":
                found.append(_Alias(target, param_of=definition.stmt.scope))
                continue
            if definition.kind == "unpack" and isinstance(value, ast.Tuple) and len(definition.index) == 1:
                value = value.elts[definition.index[0]] if definition.index[0] < len(value.elts) else None
            elif definition.kind != "assign":
                continue
            read = _getattr_name(value)
            if read is not None:  # `self.k = getattr(cfg, "grad_accum", 1)`
                value = ast.Name(id=read)
            if isinstance(value, ast.Call):
                keywords = tuple(
                    (kw.arg, given) for kw in value.keywords
                    if kw.arg is not None and (given := dotted(kw.value)) is not None
                )
                if keywords:
                    found.append(_Alias(target, keywords=keywords))
                continue
            source = dotted(value) if value is not None else None
            if source is not None:  # `tokens = k * batch` is not another name for k
                found.append(_Alias(target, source=source))
    _ALIASES[id(scope)] = (scope, found)
    return found


def k_aliases(k: ast.expr, scope: Scope) -> set[str]:
    """The names that stand for k: k itself, what it was assigned from, and what was assigned from
    it, also through an object that holds it (`self.cfg = cfg` makes `self.cfg.k` and `cfg.k` one
    value, `tcfg = cfg.train` makes `tcfg.k` and `cfg.train.k` one) and through the keyword an
    object was built with (`acc = Accelerator(gradient_accumulation_steps=n)`: `acc.gradient_accumulation_steps`
    is `n`)."""
    name = dotted(k)
    if name is None and isinstance(k, ast.Subscript) and isinstance(k.slice, ast.Constant):
        # `model.hyperparams["subdivisions"]`: the mapping that holds k, not every prefix of it
        # (`model` itself would make any loss computed by the model read as divided by k)
        name = dotted(k.value)
    names = {name} if name else set(names_in(k))
    scopes = scope.sight()
    for _ in range(3):
        grown = set(names)
        for sc in scopes:
            for alias in _alias_definitions(sc):
                target = alias.target
                if alias.param_of is not None:
                    held = [known for known in names if known == target or _prefixed(known, target) is not None]
                    if held:
                        for passed in _handed_in(target, alias.param_of):
                            grown.update(passed + known[len(target):] for known in held)
                    continue
                for arg, given in alias.keywords:
                    if f"{target}.{arg}" in names:
                        grown.add(given)
                    elif given in names:
                        grown.add(f"{target}.{arg}")
                source = alias.source
                if source is None:
                    continue
                if target in names:
                    grown.add(source)
                elif source in names:
                    grown.add(target)
                for known in names:
                    rest = _prefixed(known, target)
                    if rest is not None:
                        grown.add(source + rest)
                    rest = _prefixed(known, source)
                    if rest is not None:
                        grown.add(target + rest)
        if grown == names:
            break
        names = grown
    return names


def _gate_for(
    step: Event, loop: Loop, events: list[Event], helpers: Optional[HelperGates], in_loop: dict[int, list[Event]]
) -> Optional[Window]:
    scope = loop.scope
    for node, branch in reversed(step.stmt.path):
        if node is loop.node:
            break
        if not isinstance(node, ast.If):
            continue
        header = scope.header_of(node)
        if header is None:
            continue
        test = parse_gate(node.test, scope, header.order, helpers=helpers) or _counter_gate(node, loop) \
            or _modular_counter_gate(node, loop)
        if test is None:
            continue
        if test.positive != (branch == "body"):
            continue
        return Window("gate", loop, loop, test.k, set(), step, node, header, test, branch)
    callee_window = _callee_gate(step, loop)
    if callee_window is not None:
        return callee_window
    # `if (i + 1) % k != 0: continue` earlier in the loop body.
    for stmt, test in _continue_gates(loop, scope, events):
        if stmt.order < step.order and not step.stmt.within(stmt.node):
            return Window("continue", loop, loop, test.k, set(), step, cast(ast.If, stmt.node), stmt, test, None)
    # nanoGPT: `for micro_step in range(k): ... backward ...` then the step.
    inner_loops: dict[int, Loop] = {}  # the loops directly inside this one that hold a backward
    for event in events:
        path = event.stmt.loops
        depth = next((i for i, enclosing in enumerate(path) if enclosing is loop), len(path))
        if event.kind == BACKWARD and depth + 1 < len(path):
            inner_loops.setdefault(id(path[depth + 1]), path[depth + 1])
    for inner in inner_loops.values():
        if inner.parent is not loop or not isinstance(inner.node, FOR_LOOPS) or inner.last_order >= step.order:
            continue
        backwards = [e for e in in_loop.get(id(inner), []) if e.kind == BACKWARD]
        k = micro_batch_count(inner, backwards) if backwards else None
        if k is not None:
            return Window("inner", inner, loop, k, set(), step)
    return None


def micro_batch_count(loop: Loop, backwards: list[Event]) -> Optional[ast.expr]:
    """k, when `loop` walks k micro-batches (`for _ in range(k):`, `for micro in batch.chunk(k):`)
    and runs these backward passes on them: not the time steps of one sequence, not several
    passes over one batch."""
    k = _range_count(loop.iter_expr) or _chunk_count(loop.iter_expr)
    if k is None:
        return None
    size = int_value(k)
    if size is not None and size <= 1 or _carries_state(loop) or _same_batch_passes(loop, k, backwards):
        return None
    if _over_modules(loop, k):
        return None
    return k


def _over_modules(loop: Loop, k: ast.expr) -> bool:
    """`for t in range(len(self.heads)):` whose body runs `self.heads[t](...)`: one pass per head or
    task of a multi-task model, whose gradients are meant to add up; not k micro-batches."""
    if not (isinstance(k, ast.Call) and dotted(k.func) == "len" and len(k.args) == 1 and not k.keywords):
        return False
    held = dotted(k.args[0])
    return held is not None and any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and dotted(node.func.value) == held
        and isinstance(node.func.slice, ast.Name) and node.func.slice.id in loop.targets
        for node in ast.walk(loop.node)
    )


def _range_count(iterable: Optional[ast.expr]) -> Optional[ast.expr]:
    """`range(k)`, `range(0, k)`: k."""
    if not (isinstance(iterable, ast.Call) and dotted(iterable.func) == "range") or iterable.keywords:
        return None
    args = positionals(iterable)
    if len(args) != len(iterable.args):
        return None
    if len(args) == 1:
        return args[0]
    if len(args) == 2 and int_value(args[0]) == 0:
        return args[1]
    return None


def _chunk_count(iterable: Optional[ast.expr]) -> Optional[ast.expr]:
    """`batch.chunk(k)`, `torch.chunk(batch, k)`, and `enumerate`/`zip` of such splits into the
    same k: one batch cut into k micro-batches. (`split(n)` and slices cut by size, so how many
    micro-batches they make is not written anywhere.)"""
    if not isinstance(iterable, ast.Call):
        return None
    name = dotted(iterable.func)
    if name in {"enumerate", "zip"} and iterable.args and not iterable.keywords:
        counts = [_chunk_count(arg) for arg in (iterable.args[:1] if name == "enumerate" else iterable.args)]
        first = counts[0]
        if first is not None and all(c is not None and ast.dump(c) == ast.dump(first) for c in counts):
            return first
        return None
    if not isinstance(iterable.func, ast.Attribute) or iterable.func.attr != "chunk":
        return None
    chunks = next((kw.value for kw in iterable.keywords if kw.arg == "chunks"), None)
    index = 1 if name in {"torch.chunk", "th.chunk"} else 0
    return chunks if chunks is not None else positional(iterable, index)


def _callee_gate(step: Event, loop: Loop) -> Optional[Window]:
    """`self._maybe_step(i)` every micro-step, and the function steps only under its own window
    test (`if (i + 1) % self.k == 0:`, or `if update_grad:` with `update_grad=(i + 1) % k == 0`
    passed by the call): a window whose step block is that call. Only when the test, read at the
    call (parameters replaced by the arguments), names nothing but what the caller sees too: its
    own names, or `self` of the same class."""
    callee, call = step.callee, step.call
    if callee is None or call is None or step.stmt.loop is not loop:
        return None
    scope = callee.scope
    steps = [e for e in callee.module.direct.get(id(scope), []) if e.kind == STEP]
    if not steps:
        # `self.train_in_steps()` runs the backward, then `self.update_optimizer()` on every call,
        # which steps under its own gate: that gate holds the step of each micro-step
        deeper = _step_method_called_each_time(callee)
        if deeper is None:
            return None
        call, callee = deeper
        scope = callee.scope
        steps = [e for e in callee.module.direct.get(id(scope), []) if e.kind == STEP]
    if not steps or any(not loop_.entry for e in steps for loop_ in e.stmt.loops):
        return None  # it steps through deeper calls, or in a loop of its own
    tests: list[tuple[GateTest, Optional[ast.expr], Optional[ast.expr]]] = []
    for inner in steps:
        found = _enclosing_gate(inner.stmt, scope, call, callee, loop.scope, step.order)
        if found is None:
            return None  # some step runs on every call
        tests.append(found)
    if len({ast.dump(t.k) for t, _, _ in tests}) != 1:
        return None
    test, bound_test, passed_test = tests[0]
    own_class, loop_class = enclosing_class(scope), enclosing_class(loop.scope)
    same_self = own_class is not None and loop_class is not None and own_class.class_node is loop_class.class_node
    passed = {n for arg in (*call.args, *(kw.value for kw in call.keywords)) for n in names_in(arg)}
    own_module = callee.module.collected.module is _module_node(loop.scope)
    # A test the call passes whole (`update_grad=(i + 1) % k == 0`, or a flag the loop computed so)
    # is read in the caller's own names.
    for expr in (test.k, test.counter) if passed_test is None else ():
        for name in names_in(expr):
            root = name.split(".", 1)[0]
            if root == "self":
                if not same_self:
                    return None
            elif name not in passed and not (own_module and root not in scope.defs and root not in scope.params):
                if not (same_self and _made_from_self(name, scope)):
                    return None  # the callee's own local, or a global of another module
    window = Window("callee", loop, loop, test.k, set(), step, None, None, test, None)
    window.passed_test, window.bound_test = passed_test, bound_test
    return window


def _step_method_called_each_time(callee: Callee) -> Optional[tuple[ast.Call, Callee]]:
    """`self.update_optimizer()`, called with no arguments on every run of the method `callee`
    (no `if` or loop around it), a method of the same class that steps the optimizer itself."""
    scope = callee.scope
    own_class = enclosing_class(scope)
    if own_class is None:
        return None
    for site in scope.calls:
        func = site.call.func
        if site.call.args or site.call.keywords or site.stmt.loops or not isinstance(func, ast.Attribute):
            continue
        if dotted(func.value) != "self" or any(isinstance(node, ast.If) for node, _ in site.stmt.path):
            continue
        deeper = callee.module.resolver.resolve(site.call, scope)
        deeper_class = enclosing_class(deeper.scope) if deeper is not None else None
        if deeper is None or deeper.scope is scope or deeper_class is None or deeper_class.class_node is not own_class.class_node:
            continue
        if any(e.kind == STEP for e in deeper.module.direct.get(id(deeper.scope), [])):
            return site.call, deeper
    return None


def _made_from_self(name: str, scope: Scope) -> bool:
    """A local set once, from the object's own attributes and constants only (`curr_step =
    self.step + self.max_stepnum * self.epoch`): the caller of a method of the same class sees
    the same value."""
    definitions = scope.definitions(name)
    if len(definitions) != 1 or definitions[0].kind != "assign" or definitions[0].value is None:
        return False
    names = names_in(definitions[0].value) - {"self"}
    return bool(names) and all(n.startswith("self.") for n in names)


def _enclosing_gate(
    stmt: Stmt, scope: Scope, call: ast.Call, callee: Callee, caller: Scope, at: int
) -> Optional[tuple[GateTest, Optional[ast.expr], Optional[ast.expr]]]:
    """The window test of the innermost `if` around `stmt` whose branch holds it at the boundary,
    read at the call: (test, the whole `if` test read at the call when it parses there, the
    caller's own expression when the whole test is an argument the call passes, like
    `update_grad=(i + 1) % k == 0`)."""
    arguments = [*call.args, *(kw.value for kw in call.keywords)]
    for node, branch in reversed(stmt.path):
        if not isinstance(node, ast.If):
            continue
        bound = bind_arguments(call, callee, node.test)
        test = parse_gate(bound, caller, at) if bound is not None else None
        parsed_at_call = test is not None
        passed = bound if test is not None and any(bound is arg for arg in arguments) else None
        if test is None:
            header = scope.header_of(node)
            inside = parse_gate(node.test, scope, header.order) if header is not None else None
            if inside is not None:
                k, counter = bind_arguments(call, callee, inside.k), bind_arguments(call, callee, inside.counter)
                test = replace(inside, k=k, counter=counter) if k is not None and counter is not None else None
        if test is not None and test.positive == (branch == "body"):
            return test, bound if passed is None and parsed_at_call else None, passed
    return None


def _counter_gate(gate: ast.If, loop: Loop) -> Optional[GateTest]:
    """`micro += 1` every micro-step, `if micro == k:` (or `>=`) holds the step and sets
    `micro = 0` again: a window of k counted by hand."""
    test = gate.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.GtE))):
        return None
    counter, k = test.left, test.comparators[0]
    name = dotted(counter)
    size = int_value(k)
    if name is None or (size is not None and size <= 1) or isinstance(k, ast.Constant) and size is None:
        return None
    scope = loop.scope
    counted = reset = False
    for definition in scope.definitions(name):
        if not loop.contains(definition.stmt):
            continue
        if definition.kind == "aug" and definition.op == "AddAssign" and int_value(definition.value) == 1:
            counted = counted or not definition.stmt.within(gate)
        elif definition.kind == "assign" and int_value(definition.value) == 0 and definition.stmt.within(gate, "body"):
            reset = True
    return GateTest(k, counter, True, False, hand_counted=True) if counted and reset else None


def _modular_counter_gate(gate: ast.If, loop: Loop) -> Optional[GateTest]:
    """`c = (c + 1) % k` every micro-step (or `c += 1` then `c = c % k`, `c %= k`) and `if c == 0:`
    holding the step: a window of k counted by hand, kept in range instead of reset."""
    test = gate.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    sides = [test.left, test.comparators[0]]
    zero = [side for side in sides if is_constant(side, 0)]
    counters = [side for side in sides if dotted(side) is not None]
    if len(zero) != 1 or len(counters) != 1:
        return None
    counter = counters[0]
    name = dotted(counter)
    assert name is not None
    k: Optional[ast.expr] = None
    counted = False
    for definition in loop.scope.definitions(name):
        if not loop.contains(definition.stmt) or definition.stmt.within(gate) or definition.value is None:
            continue
        value = definition.value
        if definition.kind == "assign" and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod) \
                and name in names_in(value.left):
            k = value.right
            base, added = plus_constant(value.left)
            counted = counted or (added == 1 and dotted(base) == name)
        elif definition.kind == "aug" and definition.op == "ModuloAssign":
            k = value
        elif definition.kind == "aug" and definition.op == "AddAssign" and int_value(value) == 1:
            counted = True
    size = int_value(k) if k is not None else None
    if k is None or not counted or (size is not None and size <= 1) or isinstance(k, ast.Constant) and size is None:
        return None
    return GateTest(k, counter, True, False, hand_counted=True)


def _carries_state(loop: Loop) -> bool:
    """`out, h = rnn(x[t], h)`: each iteration feeds a call with what the previous one made, so
    the loop walks the time steps of one sequence; its backward passes add up one sequence's
    loss, they are no micro-steps of a window."""
    scope = loop.scope
    for name in {d.name for ds in scope.defs.values() for d in ds if loop.contains(d.stmt)}:
        for definition in scope.definitions(name):
            value = definition.value
            if not loop.contains(definition.stmt) or definition.kind not in {"assign", "unpack"}:
                continue
            if isinstance(value, ast.Call) and any(name in names_in(arg) for arg in (*value.args, *(kw.value for kw in value.keywords))):
                if not _made_afresh(name, definition.stmt, loop):
                    return True
    return False


def _same_batch_passes(inner: Loop, k: ast.expr, backwards: list[Event]) -> bool:
    """`for _ in range(args.n_subnets): net.sample(); loss = crit(net(images), y); loss.backward()`:
    no loss of the loop is computed from what it iterates over or from data fetched inside it,
    and its count is not named as accumulation steps. Every pass runs the one batch of the outer
    loop (sampled sub-networks, several augmentations of one batch): their gradients add up one
    objective, and the passes are no micro-batches of a window."""
    if _words(k) & _WINDOW_WORDS:
        return False
    for event in backwards:
        tensor = event.tensor
        if isinstance(tensor, ast.BinOp):
            tensor = tensor.left  # `(loss / n).backward()`
        name = dotted(tensor) if tensor is not None else None
        if name is None or event.callee is not None or _fed_by_targets(name.split(".", 1)[0], inner):
            return False
    return True


def _made_afresh(name: str, at: Stmt, loop: Loop) -> bool:
    """`state = [h[part] for h in cache]` earlier in the same iteration, from other values: what
    the call at `at` is given is no value the previous iteration made."""
    base, updates = reaching(name, loop.scope, at.order, at)
    return (
        base is not None and not updates and base.kind == "assign" and base.value is not None
        and loop.contains(base.stmt) and base.order < at.order and name not in names_in(base.value)
    )


def _continue_gates(loop: Loop, scope: Scope, events: list[Event]) -> list[tuple[Stmt, GateTest]]:
    """`if <not at a window boundary>: continue` statements directly in the loop body, and
    `if <at a boundary>: ... else: continue`: what follows them runs once per window."""
    found = []
    for stmt in scope.loop_statements(loop):
        node = stmt.node
        if stmt.loop is not loop or not isinstance(node, ast.If) or not stmt.is_statement:
            continue
        skips_off_boundary, skips_on_boundary = _ends_with_continue(node.body), _ends_with_continue(node.orelse)
        if skips_off_boundary == skips_on_boundary:
            continue
        test = parse_gate(node.test, scope, stmt.order)
        if test is not None and test.positive == skips_on_boundary:
            found.append((stmt, test))
    return found


def _index_calls(module: ast.Module, calls: Iterable[ast.Call]) -> dict[str, list[ast.Call]]:
    index: dict[str, list[ast.Call]] = {}
    for node in calls:
        func = dotted(node.func)
        if func is not None:
            index.setdefault(func, []).append(node)
            if "." in func:
                index.setdefault("." + func.rsplit(".", 1)[1], []).append(node)
    _CALL_INDEX[id(module)] = (module, index)
    return index


def _calls_by_name(module: ast.Module) -> dict[str, list[ast.Call]]:
    """The module's calls by their dotted callee; `Class(...)` reached as `pkg.Class(...)` is also
    under `.Class`. Built once per module: `_handed_in` asks for every parameter that may hold k."""
    known = _CALL_INDEX.get(id(module))
    if known is not None and known[0] is module:
        return known[1]
    return _index_calls(module, (node for node in ast.walk(module) if isinstance(node, ast.Call)))


def _module_node(scope: Scope) -> Optional[ast.Module]:
    current = scope
    while current.parent is not None:
        current = current.parent
    return current.node if isinstance(current.node, ast.Module) else None


def _plain_class(name: str, scope: Scope) -> Optional[ast.ClassDef]:
    """A class of this module used as a fixed set of constants (`class CFG: grad_accum = 1`): no
    decorator (a dataclass takes its fields as arguments), no base, no `__init__`."""
    module = _module_node(scope)
    if module is None:
        return None
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            plain = not node.decorator_list and not node.keywords and all(dotted(b) == "object" for b in node.bases)
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            return node if plain and "__init__" not in methods else None
    return None


def _class_constant(cls: ast.ClassDef, attr: str, scope: Scope) -> Optional[set[int]]:
    """The literal a plain class binds `attr` to, when nothing in the module binds it anew."""
    values: set[int] = set()
    for node in cls.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
            size = int_value(value)
            if size is None:
                return None
            values.add(size)
    module = _module_node(scope)
    if not values or module is None:
        return None
    for found in ast.walk(module):
        if isinstance(found, ast.Attribute) and found.attr == attr and isinstance(found.ctx, (ast.Store, ast.Del)):
            return None  # `CFG.grad_accum = args.k` somewhere
        if isinstance(found, ast.Call) and dotted(found.func) in {"setattr", "vars"}:
            return None
    return values


def _owner_class(owner: str, scope: Scope) -> Optional[ast.ClassDef]:
    """`CFG` itself, or `cfg` bound once to `CFG()` with no arguments."""
    cls = _plain_class(owner, scope)
    if cls is not None:
        return cls
    for current in scope.sight():
        definitions = current.definitions(owner)
        if definitions:
            value = definitions[0].value
            if len(definitions) == 1 and definitions[0].kind == "assign" and isinstance(value, ast.Call):
                if not value.args and not value.keywords and isinstance(value.func, ast.Name):
                    return _plain_class(value.func.id, scope)
            return None
    return None


# The literals a name imported from another module of the project is bound to there.
ImportedConstants = Callable[[str], Optional[set[int]]]


def _rebound_here(name: str, scope: Scope) -> bool:
    """`config.GRAD_ACCUM = 4` or `CFG.grad_accum = 4` somewhere in this module."""
    module = _module_node(scope)
    attr = name.rsplit(".", 1)[-1]
    return module is None or any(
        isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, (ast.Store, ast.Del))
        for node in ast.walk(module)
    )


def _built_with(owner: str, attr: str, scope: Scope) -> Optional[ast.expr]:
    """The keyword `attr` that the one object bound to `owner` was built with."""
    for current in scope.sight():
        definitions = current.definitions(owner)
        if definitions:
            value = definitions[0].value
            if len(definitions) == 1 and definitions[0].kind == "assign" and isinstance(value, ast.Call):
                return next((kw.value for kw in value.keywords if kw.arg == attr), None)
            return None
    return None


def k_values(
    k: ast.expr, scope: Scope, depth: int = 0, imported: Optional[ImportedConstants] = None
) -> Optional[set[int]]:
    """The literals k is bound to when the code fixes it (`K = 1`, `self.k = 1`, `k = K`, a plain
    config class's `grad_accum = 1`, `GRAD_ACCUM = 1` in a config module it imports); None when it
    can be set from outside: a parameter, an argparse flag or any attribute of an object built
    elsewhere (`args.k = 1` under an `if` is one value of a flag, not all of them), a dataclass
    field, a call's result."""
    size = int_value(k)
    if size is not None:
        return {size}
    name = dotted(k)
    if name is None or depth > 4:
        return None
    head = name.split(".", 1)[0]
    if imported is not None and not any(sc.definitions(head) for sc in scope.sight()):
        if "." in name and _rebound_here(name, scope):
            return None
        found = imported(name)
        if found is not None:
            return found
    owner, _, attr = name.rpartition(".")
    cls = _owner_class(owner, scope) if owner else None
    if cls is not None:
        return _class_constant(cls, attr, scope)
    given = _built_with(owner, attr, scope) if owner else None
    if given is not None:  # `accelerator = Accelerator(gradient_accumulation_steps=1)`
        return None if _rebound_here(name, scope) else k_values(given, scope, depth + 1, imported)
    if owner and owner.split(".", 1)[0] not in {"self", "cls"} or owner.count("."):
        return None  # `args.k`, `cfg.train.k`, `self.cfg.k`: the object comes from outside
    for current in scope.sight():
        definitions = current.definitions(name)
        if definitions:
            values: set[int] = set()
            for definition in definitions:
                if definition.kind != "assign" or definition.value is None:
                    return None
                found = k_values(definition.value, definition.stmt.scope, depth + 1, imported)
                if found is None:
                    return None
                values |= found
            return values
    return None


def _bound_to_one(k: ast.expr, scope: Scope, imported: Optional[ImportedConstants] = None) -> bool:
    """`K = 1`, `self.k = 1`, `CFG.grad_accum = 1` in a plain config class (here or in a config
    module it imports): no accumulation at all. A default that a flag or a caller may change
    (`default=1`, `k=1`, a dataclass field) is a k of unknown value, still a window."""
    values = k_values(k, scope, imported=imported)
    return values is not None and all(v <= 1 for v in values)


def find_windows(
    scope: Scope,
    all_events: list[Event],
    helpers: Optional[HelperGates] = None,
    imported: Optional[ImportedConstants] = None,
) -> list[Window]:
    """Windows of this scope, one per gate; a loop's windows are kept only when the code clearly
    accumulates: every optimizer step is gated and a backward runs every micro-step."""
    windows: list[Window] = []
    # Each loop looks only at its own events, statements and inner loops: linear in the scope.
    in_loop: dict[int, list[Event]] = {}
    for event in all_events:
        for enclosing in event.stmt.loops:
            in_loop.setdefault(id(enclosing), []).append(event)
    for loop in scope.loops:
        events = in_loop.get(id(loop), [])
        steps = [e for e in events if e.kind == STEP and e.stmt.step_loop is loop]
        if not steps:
            continue
        found: list[Window] = []
        ungated: list[Event] = []
        for step in steps:
            if any(w.in_step_block(step.stmt) for w in found):
                continue
            window = _gate_for(step, loop, events, helpers, in_loop)
            if window is None:
                # A DeepSpeed engine's step on every micro-step applies once per its own window (the
                # Hugging Face Trainer calls it so beside the gated optimizer step of its plain path).
                if step.framework != Framework.DEEPSPEED:
                    ungated.append(step)
            else:
                found.append(window)
        # Some optimizer steps every iteration (GANs): no accumulation, unless only where k is 1
        # (`if k > 1: if (i + 1) % k == 0: step()` / `else: step()`).
        if not found or any(
            not any(k_is_one_on_way(s.stmt, w.k, scope) or _modes_apart(s.stmt, w.step.stmt, loop, scope) for w in found)
            for s in ungated
        ):
            continue
        skips = [stmt for stmt, _ in _continue_gates(loop, scope, events)]
        for window in found:
            window.skips = skips
            window.paired = _paired_backwards(window, events)
            window.siblings = [w for w in found if w is not window]
            window.steps = [e for e in events if e.kind == STEP and window.in_step_block(e.stmt)]
            window.other_steps = [
                e for e in events if e.kind == STEP and window.micro_loop.contains(e.stmt)
                and not any(w.in_step_block(e.stmt) for w in found)
                and not k_is_one_on_way(e.stmt, window.k, scope)  # `else:` of `if k > 1:`, another mode
            ]
        if any(
            w.form == "gate" and w.gate is not None and e.kind == STEP and e.stmt.within(w.gate)
            and not any(x.in_step_block(e.stmt) for x in found)
            for w in found for e in events
        ):
            continue  # steps on both branches of one gate: alternating updates, not accumulation
        for window in found:
            if _bound_to_one(window.k, scope, imported):
                continue
            if any(e.kind == BACKWARD and (window.every_micro_step(e.stmt) or window.backward_in_call(e)) for e in events):
                window.k_names = k_aliases(window.k, scope)
                windows.append(window)
    return windows


def _branches_running(gate: ast.AST, backwards: list[Event]) -> set[str]:
    """The branches of `gate` that run one of these backward passes whenever they run."""
    return {branch for e in backwards for node, branch in e.stmt.path if node is gate and e.stmt.runs_whenever(gate)}


def _paired_backwards(window: Window, events: list[Event]) -> set[int]:
    """`if (i + 1) % k == 0: loss.backward(); step()` / `else: loss.backward()`: a backward on
    each branch of the gate, the step branch's before its step. One of them runs on every
    micro-step, so both are read as the window's per-micro-step backward (each must be divided)."""
    gate, branch = window.gate, window.branch
    if window.form != "gate" or gate is None or branch is None:
        return set()
    other = "orelse" if branch == "body" else "body"
    backwards = [e for e in events if e.kind == BACKWARD and e.helper is None and e.stmt.runs_whenever(gate)]
    stepping = [e for e in backwards if e.stmt.within(gate, branch) and e.order < window.step.order]
    plain = [e for e in backwards if e.stmt.within(gate, other)]
    if not stepping or not plain:
        return set()
    return {id(e.stmt) for e in stepping + plain}


# How often something is shown, measured or saved: a gate on these is no accumulation window.
_REPORTING_WORDS = frozenset({
    "log", "logs", "logging", "print", "printing", "display", "disp", "show", "verbose", "report",
    "eval", "evaluate", "evaluation", "val", "valid", "validate", "validation", "test", "save",
    "saving", "checkpoint", "checkpointing", "ckpt", "progress", "pbar", "tqdm", "summary",
    "tensorboard", "tb", "wandb", "plot", "vis", "visualize", "sample", "sampling",
})
# Words that say the number is about the window itself (`update_every`, `accum_log_steps`).
_WINDOW_WORDS = frozenset({
    "accum", "accumulate", "accumulation", "accumulations", "gas", "update", "updates", "grad",
    "grads", "gradient", "gradients", "micro", "optim", "optimizer", "optimiser", "backward",
})


def _words(expr: ast.expr) -> set[str]:
    """The words of the last part of every name in `expr` and of its string keys
    (`args.logging_steps` -> logging, steps; `cfg["printEvery"]` -> print, every)."""
    texts = [name.rsplit(".", 1)[-1] for name in names_in(expr)]
    texts += [node.value for node in ast.walk(expr) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    words: set[str] = set()
    for text in texts:
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
        words.update(word for word in re.split(r"[^a-z0-9]+", spaced.lower()) if word)
    return words


def reporting_frequency(k: ast.expr) -> bool:
    """`args.logging_steps`, `log_interval`, `print_every`, `cfg["eval_freq"]`: a modulus that
    reads as how often to log, show progress, evaluate or save, and not as accumulation steps."""
    words = _words(k)
    return bool(words & _REPORTING_WORDS) and not words & _WINDOW_WORDS


def range_len(iterable: ast.expr) -> Optional[ast.expr]:
    """`range(len(x))` -> x."""
    if isinstance(iterable, ast.Call) and dotted(iterable.func) == "range" and len(iterable.args) == 1:
        inner = iterable.args[0]
        if isinstance(inner, ast.Call) and dotted(inner.func) == "len":
            return positional(inner, 0)
    return None


@dataclass(frozen=True)
class Dedented:
    """`for micro in batch.chunk(k): loss = ...` and then `loss.backward()` after that loop: only
    the last micro-batch's loss reaches backward, so the step runs on its gradient alone."""

    backward: Event
    micro_loop: Loop
    name: str  # the loss, assigned anew on every micro-step
    assigned: Stmt


def _fetches_data(value: Optional[ast.expr]) -> bool:
    """`next(loader)`, `get_batch("train")`, also inside the call that uses it (`model(next(it))`)."""
    for node in ast.walk(value) if value is not None else ():
        if isinstance(node, ast.Call):
            func = (dotted(node.func) or "").rsplit(".", 1)[-1].lower()
            if func == "next" or "batch" in func:
                return True
    return False


def _fed_by_targets(name: str, loop: Loop) -> bool:
    """The value bound to `name` in the loop is computed from what the loop iterates over."""
    scope = loop.scope
    inside = [d for ds in scope.defs.values() for d in ds if loop.contains(d.stmt) and d.value is not None]
    # nanoGPT's `for micro_step in range(k): X, Y = get_batch("train")`: fresh data on every micro-step
    tainted = set(loop.targets) | {d.name for d in inside if _fetches_data(d.value)}
    for _ in range(4):
        grown = tainted | {
            d.name for d in inside
            if d.value is not None and any(n.split(".", 1)[0] in tainted for n in names_in(d.value))
        }
        if grown == tainted:
            break
        tainted = grown
    return name in tainted


def dedented_backwards(scope: Scope, events: list[Event]) -> list[Dedented]:
    found: list[Dedented] = []
    for event in events:
        if event.kind != BACKWARD or event.helper or event.tensor is None or not event.stmt.loops:
            continue
        tensor = event.tensor
        if isinstance(tensor, ast.BinOp) and isinstance(tensor.op, ast.Div):
            tensor = tensor.left  # `(loss / k).backward()`
        name = dotted(tensor)
        outer = event.stmt.loops[-1]
        if name is None or "." in name:
            continue
        definitions = [d for d in scope.definitions(name) if outer.contains(d.stmt) and d.order < event.order]
        if not definitions:
            continue
        first, assigned = definitions[0], definitions[-1]
        inner = first.stmt.loop
        if (
            inner is None or inner.parent is not outer or not isinstance(inner.node, FOR_LOOPS)
            or inner.last_order >= event.order or not over_micro_batches(inner.iter_expr)
            or any(d.stmt.loop is not inner for d in definitions)
        ):
            continue
        # Bound anew on every micro-step (then maybe `loss = loss / k`), not summed over them
        # (`loss += part`, `loss = loss + part`, or a total started before the loop).
        if first.kind not in {"assign", "unpack"} or first.value is None or name in names_in(first.value):
            continue
        if any(isinstance(n, ast.Break) for n in ast.walk(inner.node)) or _carries_state(inner):
            continue
        if any(e.kind == BACKWARD and inner.contains(e.stmt) for e in events):
            continue
        if not any(e.kind == STEP and outer.contains(e.stmt) and e.order > event.order for e in events):
            continue
        if not _fed_by_targets(name, inner):
            continue
        found.append(Dedented(event, inner, name, assigned.stmt))
    return found


def flag_dest(call: ast.Call) -> Optional[str]:
    """The attribute argparse gives `parser.add_argument(...)`'s value: `dest=`, else the first
    long option (`--accum-steps` -> `accum_steps`), else the first short one, else the positional
    name."""
    dest = next((kw.value for kw in call.keywords if kw.arg == "dest"), None)
    if dest is not None:
        return dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else None
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not options or len(options) != len(call.args):
        return None
    long = [o for o in options if o.startswith("--")]
    chosen = long[0][2:] if long else options[0].lstrip("-")
    return chosen.replace("-", "_") or None


def flag_dests(calls: Iterable[ast.Call], names_k: Callable[[str], bool]) -> set[str]:
    """The attributes of argparse flags any of whose option strings (or whose dest) reads as the
    accumulation steps: `add_argument("--gradient-accumulation-steps", dest="gas")` gives `gas`,
    `add_argument("--gas", "--gradient-accumulation-steps")` gives `gas` too."""
    found: set[str] = set()
    for node in calls:
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        dest = flag_dest(node)
        spellings = [a.value.lstrip("-").replace("-", "_") for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if dest is not None and any(names_k(s) for s in [*spellings, dest]):
            found.add(dest)
    return found
