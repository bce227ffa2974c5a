"""One walk over a module that records what every rule needs: statements, definitions, name
reads, calls and loops, per function scope. Nothing here knows about the rules."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

from accumlint.analysis.entries import gates_its_own_window, may_step, runs_whole_window, steps_each_optimizer
from accumlint.analysis.exprs import dotted, is_constant, last_part, literal_element, method_of
from accumlint.frameworks import keras, lightning

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
LoopNode = Union[ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
FOR_LOOPS = (ast.For, ast.AsyncFor)
WITHS = (ast.With, ast.AsyncWith)
TRIES: tuple[type[ast.Try], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))  # `except*` from 3.11
# Blocks that may skip what they hold (a `with` never does): a test, a loop, a `try` that may stop
# early, an `except` clause, a `case`.
SKIPPING_BLOCKS = (ast.If, *FOR_LOOPS, ast.While, *TRIES, ast.ExceptHandler, ast.match_case)

# Calls whose result shares no autograd graph with their input.
DETACH_METHODS = frozenset({"detach", "detach_", "item", "tolist", "numpy", "data"})
DETACH_FUNCTION_HINTS = ("detach", "repackage")
NO_GRAD_CONTEXTS = frozenset({"no_grad", "inference_mode"})
AUG_NAMES = {
    ast.Add: "AddAssign", ast.Sub: "SubtractAssign", ast.Mult: "MultiplyAssign", ast.Div: "DivideAssign",
    ast.FloorDiv: "FloorDivideAssign", ast.Mod: "ModuloAssign", ast.Pow: "PowerAssign",
    ast.MatMult: "MatrixMultiplyAssign",
}


@dataclass(eq=False, repr=False)
class Scope:
    node: Union[ast.Module, FunctionNode]
    name: str
    parent: Optional["Scope"]
    class_node: Optional[ast.ClassDef] = None
    class_bases: tuple[str, ...] = ()
    no_grad: bool = False
    params: list[str] = field(default_factory=list)
    defs: dict[str, list["Definition"]] = field(default_factory=dict)
    occurrences: list["Occurrence"] = field(default_factory=list)
    returns: list[tuple[ast.expr, "Stmt"]] = field(default_factory=list)
    loops: list["Loop"] = field(default_factory=list)
    calls: list["CallSite"] = field(default_factory=list)
    stmts: list["Stmt"] = field(default_factory=list)
    _headers: Optional[dict[int, "Stmt"]] = field(default=None, repr=False)
    _by_loop: Optional[dict[int, list["Stmt"]]] = field(default=None, repr=False)
    _k_pins: Optional[list[tuple[list[ast.expr], str]]] = field(default=None, repr=False)  # pinned.py
    _loop_targets: Optional[frozenset[str]] = field(default=None, repr=False)
    # The methods of this scope's class, this one included (one list shared by all of them):
    # `self.k` set in `__init__` is read in `train_epoch`.
    class_scopes: list["Scope"] = field(default_factory=list, repr=False)

    def sight(self) -> list["Scope"]:
        """The scopes whose names this one can read: itself, enclosing functions and the module,
        and for `self.` attributes the other methods of its class."""
        found: list[Scope] = []
        seen: set[int] = set()
        current: Optional[Scope] = self
        while current is not None:
            for scope in (current, *current.class_scopes):
                if id(scope) not in seen:
                    seen.add(id(scope))
                    found.append(scope)
            current = current.parent
        return found

    def definitions(self, name: str) -> list["Definition"]:
        return self.defs.get(name, [])

    def loop_targets(self) -> frozenset[str]:
        """The names some `for` loop of this scope binds (counters, items drawn, layers walked),
        worked out once."""
        if self._loop_targets is None:
            self._loop_targets = frozenset(
                name for name, definitions in self.defs.items() if any(d.kind == "for" for d in definitions)
            )
        return self._loop_targets

    def binding_scopes(self, name: str) -> list["Scope"]:
        """Where a binding of `name` read here can be made: for `self.x`, every method of the class
        this scope is (or sits in) a method of; otherwise this function and those around it,
        innermost first."""
        if name.startswith("self."):
            owner = enclosing_class(self)
            return list(owner.class_scopes) if owner is not None else [self]
        chain: list[Scope] = []
        current: Optional[Scope] = self
        while current is not None:
            chain.append(current)
            current = current.parent
        return chain

    def loop_statements(self, loop: "Loop") -> list["Stmt"]:
        """The statements whose innermost loop is `loop` (built once per scope)."""
        if self._by_loop is None:
            self._by_loop = {}
            for stmt in self.stmts:
                if stmt.loops:
                    self._by_loop.setdefault(id(stmt.loops[-1]), []).append(stmt)
        return self._by_loop.get(id(loop), [])

    def header_of(self, node: ast.AST) -> Optional["Stmt"]:
        """The statement record of a compound statement's header (built once per scope)."""
        if self._headers is None:
            self._headers = {}
            for stmt in self.stmts:
                if stmt.is_statement:
                    self._headers.setdefault(id(stmt.node), stmt)
        return self._headers.get(id(node))

    @property
    def is_lightning_training_step(self) -> bool:
        """Lightning calls it once per micro-batch."""
        return self.name == lightning.TRAINING_STEP and any(b.endswith(lightning.MODULE_BASE_SUFFIX) for b in self.class_bases)


def opens_no_grad(node: ast.AST) -> bool:
    """`with torch.no_grad():`, `inference_mode()`, `set_grad_enabled(False)`."""
    if not isinstance(node, (ast.With, ast.AsyncWith)):
        return False
    for item in node.items:
        context = item.context_expr
        if isinstance(context, ast.Call):
            last = last_part(dotted(context.func))
            if last in NO_GRAD_CONTEXTS:
                return True
            if last == "set_grad_enabled" and context.args and is_constant(context.args[0], False):
                return True
    return False


@dataclass(eq=False, repr=False)
class Stmt:
    node: ast.AST  # the simple statement, or the compound statement for its header
    order: int
    path: tuple[tuple[ast.AST, str], ...]  # enclosing compound statements and the branch taken
    scope: Scope
    loops: tuple["Loop", ...]  # enclosing loops of this scope, outermost first
    no_grad: bool
    block: Optional[list] = None  # the statement list that holds `node` (None for synthetic headers)

    @property
    def loop(self) -> Optional["Loop"]:
        return self.loops[-1] if self.loops else None

    @property
    def step_loop(self) -> Optional["Loop"]:
        """The innermost loop a step here repeats with: a loop that only steps each of several
        optimizers (`for opt in optimizers: scaler.step(opt)`) runs within one iteration."""
        return next((loop for loop in reversed(self.loops) if not loop.over_optimizers), None)

    @property
    def is_statement(self) -> bool:
        """A real statement of the source (not a loop target or parameter record)."""
        return self.block is not None

    @property
    def own_parts(self) -> list[ast.AST]:
        """What the statement evaluates itself: a compound statement's header (an `if`'s test, a
        loop's iterable, a `with`'s contexts), a simple statement whole; the body's statements are
        their own, and a nested def or class runs nothing here."""
        node = self.node
        if isinstance(node, (ast.If, ast.While)):
            return [node.test]
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return [node.iter]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            return [item.context_expr for item in node.items]
        if isinstance(node, ast.Match):
            return [node.subject]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
            return []
        return [node]

    def grad_turned_off_at(self) -> Optional["Stmt"]:
        """The header of the `with` that turned autograd off around this statement (the outermost,
        itself run with autograd on), or None: autograd is on here, or off for the whole call."""
        for node, _ in self.path:
            if opens_no_grad(node):
                header = self.scope.header_of(node)
                return header if header is not None and not header.no_grad else None
        return None

    def within(self, node: ast.AST, branch: Optional[str] = None) -> bool:
        return any(n is node and (branch is None or b == branch) for n, b in self.path)

    def blocks_inside(self, node: ast.AST) -> Optional[tuple[tuple[ast.AST, str], ...]]:
        """The blocks around the statement that lie inside `node` (outermost first, `node` left
        out); None when the statement is not inside `node`."""
        nodes = [id(n) for n, _ in self.path]
        return self.path[nodes.index(id(node)) + 1:] if id(node) in nodes else None

    def runs_whenever(self, node: Optional[ast.AST] = None) -> bool:
        """Runs whenever the block of `node` around it runs (without `node`: on every call of its
        function), with no block between them that may skip it. False when not inside `node`."""
        path = self.path if node is None else self.blocks_inside(node)
        return path is not None and not any(isinstance(n, SKIPPING_BLOCKS) for n, _ in path)

    def compatible(self, other: "Stmt") -> bool:
        """False when the two sit on different branches of one `if` (they never both run)."""
        branches = {id(node): branch for node, branch in self.path}
        return all(branches.get(id(node), branch) == branch for node, branch in other.path)


@dataclass(eq=False, repr=False)
class Definition:
    name: str
    kind: str  # assign, aug, inplace, unpack, for, with, param
    value: Optional[ast.expr]
    stmt: Stmt
    op: Optional[str] = None  # the operator of an augmented assignment or the in-place method
    index: tuple[int, ...] = ()  # position inside an unpacked tuple target

    @property
    def order(self) -> int:
        return self.stmt.order

    def bound_value(self) -> Optional[ast.expr]:
        """The value the name gets: the whole value, or for an unpack the element of the literal
        tuple it came from (`self.model, self.opt = DDP(model), SGD(...)`); None when unknown."""
        return literal_element(self.value, self.index) if self.kind == "unpack" else self.value


@dataclass(eq=False, repr=False)
class Occurrence:
    name: str
    write: bool
    detached: bool  # read through .detach()/.item()/repackage_hidden(...)
    in_call_arg: bool  # read as (part of) an argument of a call
    stmt: Stmt
    seq: int


@dataclass(eq=False, repr=False)
class CallSite:
    call: ast.Call
    stmt: Stmt
    context_manager: bool = False  # used as a `with` item


@dataclass(eq=False, repr=False)
class Loop:
    node: LoopNode
    header: Stmt
    scope: Scope
    parent: Optional["Loop"]
    targets: tuple[str, ...] = ()
    iter_expr: Optional[ast.expr] = None
    first_order: int = 0
    last_order: int = 0
    implicit: bool = False  # a framework hook called once per micro-batch (Lightning training_step)
    entry: bool = False  # implicit: a project function that gates its own window (see entries.py)
    _over_optimizers: Optional[bool] = field(default=None, repr=False)

    @property
    def over_optimizers(self) -> bool:
        """`for opt in optimizers: opt.step()`: not a loop over data. Read on first use: only the
        loops around a step ask, and walking every loop's body for it cost a whole-repository run
        a tenth of its time."""
        if self._over_optimizers is None:
            self._over_optimizers = steps_each_optimizer(self.node)
        return self._over_optimizers

    def contains(self, stmt: Stmt) -> bool:
        return any(loop is self for loop in stmt.loops)

    @property
    def body(self) -> list[ast.stmt]:
        return list(self.node.body)


def enclosing_class(scope: Optional[Scope]) -> Optional[Scope]:
    """The scope of the class whose method `scope` is (or sits in), or None."""
    while scope is not None and scope.class_node is None:
        scope = scope.parent
    return scope


@dataclass
class Collected:
    module: ast.Module
    scopes: list[Scope]
    imports: dict[str, str]  # local alias -> dotted origin
    classes: dict[str, ast.ClassDef]
    functions: dict[str, list[Scope]]  # simple name -> scopes defining it
    relative_imports: dict[str, tuple[int, str]] = field(default_factory=dict)  # alias -> (level, dotted)
    # Whole-module facts that rules read from every module that imports this one (computed once).
    memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)


_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})


def _backward_outside_loops(scope: Scope) -> bool:
    """A `.backward(...)` call of this function that no loop of it encloses (read from the calls
    already collected: most functions have none, and are not walked again)."""
    return any(
        not site.stmt.loops and isinstance(site.call.func, ast.Attribute) and site.call.func.attr in _BACKWARD_METHODS
        for site in scope.calls
    )


def _step_after_a_loop(scope: Scope) -> bool:
    """A call outside this function's loops that may step (`.step(...)`, or a method of the
    object named for a step: see `may_step`), and a loop of it: read from what was collected, so
    that most functions are not walked again."""
    return any(loop.parent is None for loop in scope.loops) and any(
        not site.stmt.loops and may_step(site.call) for site in scope.calls
    )


def _wrap_in_entry_loop(scope: Scope, node: FunctionNode, header: Stmt, first: int, last: int) -> None:
    """Make the collected body of `scope` one iteration of an implicit loop (see entries.py)."""
    hook = Loop(node=node, header=header, scope=scope, parent=None, implicit=True, entry=True)
    hook.first_order, hook.last_order = first, last
    for stmt in scope.stmts:
        if stmt is not header:
            stmt.loops = (hook, *stmt.loops)
    for loop in scope.loops:
        if loop.parent is None:
            loop.parent = hook
    scope.loops.insert(0, hook)


def target_names(target: ast.AST, prefix: tuple[int, ...] = ()) -> list[tuple[str, tuple[int, ...]]]:
    if isinstance(target, (ast.Tuple, ast.List)):
        found = []
        for i, element in enumerate(target.elts):
            if isinstance(element, ast.Starred):
                continue
            found.extend(target_names(element, prefix + (i,)))
        return found
    name = dotted(target)
    return [(name, prefix)] if name else []


def _no_grad_decorator(decorator: ast.expr) -> bool:
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    return last_part(dotted(func)) in NO_GRAD_CONTEXTS


class _Collector:
    def __init__(self, module: ast.Module, imports: Optional[Mapping[str, str]] = None) -> None:
        self.module = module
        self.order = 0
        self.seq = 0
        self.scopes: list[Scope] = []
        self.imports: dict[str, str] = dict(imports or {})
        self.relative: dict[str, tuple[int, str]] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, list[Scope]] = {}
        self.bound: set[str] = set()  # names bound by the comprehensions being read
        self.class_members: dict[int, list[Scope]] = {}

    # --- statements -------------------------------------------------------------------
    def run(self) -> Collected:
        root = Scope(node=self.module, name="<module>", parent=None)
        self.scopes.append(root)
        self._block(self.module.body, root, (), (), False)
        return Collected(self.module, self.scopes, self.imports, self.classes, self.functions, self.relative)

    def _stmt(self, node, scope, path, loops, no_grad, block=None) -> Stmt:
        self.order += 1
        stmt = Stmt(node, self.order, path, scope, loops, no_grad, block)
        scope.stmts.append(stmt)
        return stmt

    def _block(self, body: list, scope, path, loops, no_grad) -> None:
        for statement in body:
            self._statement(statement, body, scope, path, loops, no_grad)

    def _statement(self, node, block, scope, path, loops, no_grad) -> None:
        if isinstance(node, FUNCTIONS):
            self._function(node, block, scope, path, loops, no_grad)
        elif isinstance(node, ast.ClassDef):
            self.classes[node.name] = node
            header = self._stmt(node, scope, path, loops, no_grad, block)
            for base in node.bases:
                self._read(base, header)
            self._block(node.body, scope, path + ((node, "body"),), loops, no_grad)
        elif isinstance(node, (*FOR_LOOPS, ast.While)):
            self._loop(node, block, scope, path, loops, no_grad)
        elif isinstance(node, ast.If):
            header = self._stmt(node, scope, path, loops, no_grad, block)
            self._read(node.test, header)
            self._block(node.body, scope, path + ((node, "body"),), loops, no_grad)
            self._block(node.orelse, scope, path + ((node, "orelse"),), loops, no_grad)
        elif isinstance(node, WITHS):
            self._with(node, block, scope, path, loops, no_grad)
        elif isinstance(node, TRIES):
            self._block(node.body, scope, path + ((node, "body"),), loops, no_grad)
            for handler in node.handlers:
                self._block(handler.body, scope, path + ((handler, "body"),), loops, no_grad)
            self._block(node.orelse, scope, path + ((node, "orelse"),), loops, no_grad)
            self._block(node.finalbody, scope, path + ((node, "finally"),), loops, no_grad)
        elif isinstance(node, ast.Match):
            header = self._stmt(node, scope, path, loops, no_grad, block)
            self._read(node.subject, header)
            for case in node.cases:
                self._block(case.body, scope, path + ((case, "body"),), loops, no_grad)
        else:
            stmt = self._stmt(node, scope, path, loops, no_grad, block)
            self._small(node, stmt)

    def _function(self, node: FunctionNode, block, scope, path, loops, no_grad) -> None:
        header = self._stmt(node, scope, path, loops, no_grad, block)
        for decorator in node.decorator_list:
            self._read(decorator, header)
        class_node = path[-1][0] if path and isinstance(path[-1][0], ast.ClassDef) else None
        inner_no_grad = no_grad or any(_no_grad_decorator(d) for d in node.decorator_list)
        inner = Scope(
            node=node,
            name=node.name,
            parent=scope,
            class_node=class_node,
            class_bases=tuple(dotted(base) or "" for base in (class_node.bases if class_node is not None else ())),
            no_grad=inner_no_grad,
        )
        self.scopes.append(inner)
        self.functions.setdefault(node.name, []).append(inner)
        if class_node is not None:
            inner.class_scopes = self.class_members.setdefault(id(class_node), [])
            inner.class_scopes.append(inner)
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                inner.params.append(arg.arg)
        param_stmt = self._stmt(node, inner, (), (), inner_no_grad)
        for name in inner.params:
            self._define(Definition(name, "param", None, param_stmt))
        loops_inside: tuple[Loop, ...] = ()
        if inner.is_lightning_training_step or self._keras_train_step(inner):
            # Lightning calls training_step, and Keras's `fit` a model's train_step, once per
            # micro-batch: its body is one loop iteration.
            hook = Loop(node=node, header=param_stmt, scope=inner, parent=None, implicit=True)
            hook.first_order = self.order + 1
            inner.loops.append(hook)
            loops_inside = (hook,)
        first = self.order + 1
        self._block(node.body, inner, (), loops_inside, inner_no_grad)
        if loops_inside:
            loops_inside[0].last_order = self.order
        elif (_backward_outside_loops(inner) and gates_its_own_window(node)) or (
            _step_after_a_loop(inner) and runs_whole_window(node)
        ):
            # So does the project's own driver call a step method that keeps its window itself.
            _wrap_in_entry_loop(inner, node, param_stmt, first, self.order)

    def _loop(self, node, block, scope, path, loops, no_grad) -> None:
        header = self._stmt(node, scope, path, loops, no_grad, block)
        loop = Loop(node=node, header=header, scope=scope, parent=loops[-1] if loops else None)
        is_for = isinstance(node, FOR_LOOPS)
        if is_for:
            loop.iter_expr = node.iter
            self._read(node.iter, header)
            loop.targets = tuple(name for name, _ in target_names(node.target))
        else:
            self._read(node.test, header)
        scope.loops.append(loop)
        inner_loops = loops + (loop,)
        loop.first_order = self.order + 1
        if is_for:
            # The loop target is written at the top of every iteration.
            target_stmt = self._stmt(node, scope, path + ((node, "body"),), inner_loops, no_grad)
            for name, index in target_names(node.target):
                self._define(Definition(name, "for", node.iter, target_stmt, index=index))
                self._occur(name, True, False, False, target_stmt)
        self._block(node.body, scope, path + ((node, "body"),), inner_loops, no_grad)
        loop.last_order = self.order
        self._block(node.orelse, scope, path + ((node, "orelse"),), loops, no_grad)

    def _with(self, node, block, scope, path, loops, no_grad) -> None:
        header = self._stmt(node, scope, path, loops, no_grad, block)
        inner_no_grad = no_grad or opens_no_grad(node)
        for item in node.items:
            context = item.context_expr
            self._read(context, header, context_manager=True)
            if item.optional_vars is not None:
                for name, index in target_names(item.optional_vars):
                    self._define(Definition(name, "with", context, header, index=index))
                    self._occur(name, True, False, False, header)
        self._block(node.body, scope, path + ((node, "body"),), loops, inner_no_grad)

    def _keras_train_step(self, scope: Scope) -> bool:
        """`train_step` of a Keras model subclass, in a module that imports TensorFlow or Keras."""
        if scope.name != keras.TRAIN_STEP or not any(b.endswith(keras.MODEL_BASE_SUFFIXES) for b in scope.class_bases):
            return False
        return any(origin.split(".", 1)[0] in keras.IMPORT_ROOTS for origin in self.imports.values())

    # --- simple statements -------------------------------------------------------------
    def _small(self, node: ast.stmt, stmt: Stmt) -> None:
        if isinstance(node, ast.Assign):
            self._read(node.value, stmt)
            for target in node.targets:
                self._assign_target(target, node.value, stmt)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._read(node.value, stmt)
                self._assign_target(node.target, node.value, stmt)
        elif isinstance(node, ast.AugAssign):
            self._read(node.value, stmt)
            name = dotted(node.target)
            if name is not None:
                self._occur(name, False, False, False, stmt)
                op = AUG_NAMES.get(type(node.op), type(node.op).__name__)
                self._define(Definition(name, "aug", node.value, stmt, op=op))
                self._occur(name, True, False, False, stmt)
            else:
                self._read(node.target, stmt)
        elif isinstance(node, ast.Expr):
            self._read(node.value, stmt)
            call = node.value
            if isinstance(call, ast.Call):
                receiver, method = method_of(call)
                name = dotted(receiver) if receiver is not None else None
                if name is not None and method is not None and method.endswith("_"):
                    self._define(Definition(name, "inplace", call, stmt, op=method))
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self._read(node.value, stmt)
                stmt.scope.returns.append((node.value, stmt))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            _record_import(node, self.imports, self.relative)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self._read(target, stmt)
        else:
            for child in ast.iter_child_nodes(node):
                self._read(child, stmt)

    def _assign_target(self, target, value, stmt) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for name, index in target_names(target):
                self._define(Definition(name, "unpack", value, stmt, index=index))
                self._occur(name, True, False, False, stmt)
            return
        single = dotted(target)
        if single is not None:
            self._define(Definition(single, "assign", value, stmt))
            self._occur(single, True, False, False, stmt)
        else:  # x[i] = v, obj.f().g = v: the container is read, not rebound
            self._read(target, stmt)

    # --- expressions ---------------------------------------------------------------------
    def _define(self, definition: Definition) -> None:
        definition.stmt.scope.defs.setdefault(definition.name, []).append(definition)

    def _occur(self, name, write, detached, in_arg, stmt) -> None:
        if not write and self.bound and name.split(".")[0] in self.bound:
            return
        self.seq += 1
        stmt.scope.occurrences.append(Occurrence(name, write, detached, in_arg, stmt, self.seq))

    def _read(self, node: ast.AST, stmt: Stmt, detached=False, in_arg=False, context_manager=False) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = dotted(node)
            if name is not None:
                self._occur(name, False, detached, in_arg, stmt)
                return
        if isinstance(node, ast.Call):
            stmt.scope.calls.append(CallSite(node, stmt, context_manager))
            receiver, method = method_of(node)
            func_name = last_part(dotted(node.func)).lower()
            if receiver is not None and method in DETACH_METHODS:
                self._read(receiver, stmt, True, in_arg)
            else:
                if receiver is not None:
                    self._read(receiver, stmt, detached, in_arg)
                else:
                    self._read(node.func, stmt, detached, False)
                args_detached = detached or any(h in func_name for h in DETACH_FUNCTION_HINTS)
                for arg in node.args:
                    self._read(arg, stmt, args_detached, True)
                for kw in node.keywords:
                    self._read(kw.value, stmt, args_detached, True)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self._read_comprehension(node, stmt, detached, in_arg)
            return
        if isinstance(node, ast.NamedExpr):
            self._read(node.value, stmt, detached, in_arg)
            self._assign_target(node.target, node.value, stmt)
            return
        for child in ast.iter_child_nodes(node):
            self._read(child, stmt, detached, in_arg)

    def _read_comprehension(self, node, stmt, detached, in_arg) -> None:
        # `tuple(h.detach() for h in hidden)` detaches `hidden`: the element expression decides.
        element = node.value if isinstance(node, ast.DictComp) else node.elt
        element_detached = detached
        if isinstance(element, ast.Call):
            _, method = method_of(element)
            element_detached = detached or method in DETACH_METHODS
        bound = {name for gen in node.generators for name, _ in target_names(gen.target)}
        for generator in node.generators:
            self._read(generator.iter, stmt, element_detached, in_arg)
        if not element_detached:
            # Names bound by the comprehension itself are not the enclosing scope's names.
            outer = self.bound
            self.bound = outer | bound
            self._read(element, stmt, detached, in_arg)
            self.bound = outer


def collect(module: ast.Module, imports: Optional[Mapping[str, str]] = None) -> Collected:
    """`imports`: names imported where this module cannot show it (a notebook's other cells)."""
    return _Collector(module, imports).run()


def _record_import(
    node: Union[ast.Import, ast.ImportFrom], imports: dict[str, str], relative: dict[str, tuple[int, str]]
) -> None:
    """Local alias -> dotted origin (`import a.b` binds `a`; `from . import m` is also relative)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname is not None:
                imports[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                imports.setdefault(head, head)
        return
    module_name = node.module or ""
    for alias in node.names:
        if alias.name == "*":
            continue
        local = alias.asname or alias.name
        imports[local] = f"{module_name}.{alias.name}" if module_name else alias.name
        if node.level:
            relative[local] = (node.level, imports[local])


def imports_of(module: ast.Module) -> dict[str, str]:
    """Every import of a module, local alias -> dotted origin, as `collect` reads them (in source
    order, so a later import of a name wins the same way), without collecting the rest."""
    imports: dict[str, str] = {}
    nodes = [node for node in ast.walk(module) if isinstance(node, (ast.Import, ast.ImportFrom))]
    for node in sorted(nodes, key=lambda node: (node.lineno, node.col_offset)):
        _record_import(node, imports, {})
    return imports
