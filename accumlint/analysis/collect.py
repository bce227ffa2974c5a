"""One walk over the module that records what every rule needs: statements, definitions,
name reads, calls and loops, per function scope. Nothing here knows about the rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from accumlint.analysis.exprs import dotted, method_of

LoopNode = Union[cst.For, cst.While, cst.FunctionDef]

# Calls whose result shares no autograd graph with their input.
DETACH_METHODS = frozenset({"detach", "detach_", "item", "tolist", "numpy", "data"})
DETACH_FUNCTION_HINTS = ("detach", "repackage")
NO_GRAD_CONTEXTS = frozenset({"no_grad", "inference_mode"})


@dataclass(eq=False, repr=False)
class Scope:
    node: Union[cst.Module, cst.FunctionDef]
    name: str
    parent: Optional["Scope"]
    class_node: Optional[cst.ClassDef] = None
    class_bases: tuple[str, ...] = ()
    no_grad: bool = False
    params: list[str] = field(default_factory=list)
    defs: dict[str, list["Definition"]] = field(default_factory=dict)
    occurrences: list["Occurrence"] = field(default_factory=list)
    returns: list[tuple[cst.BaseExpression, "Stmt"]] = field(default_factory=list)
    loops: list["Loop"] = field(default_factory=list)
    calls: list["CallSite"] = field(default_factory=list)
    stmts: list["Stmt"] = field(default_factory=list)

    def definitions(self, name: str) -> list["Definition"]:
        return self.defs.get(name, [])

    @property
    def is_lightning_training_step(self) -> bool:
        """Lightning calls it once per micro-batch."""
        return self.name == "training_step" and any(b.endswith("LightningModule") for b in self.class_bases)


@dataclass(eq=False, repr=False)
class Stmt:
    node: cst.CSTNode  # the small statement, or the compound statement for its header
    line: cst.CSTNode  # what a fix replaces: the SimpleStatementLine or the compound statement
    order: int
    path: tuple[tuple[cst.CSTNode, str], ...]  # enclosing compound statements and the branch taken
    scope: Scope
    loops: tuple["Loop", ...]  # enclosing loops of this scope, outermost first
    no_grad: bool

    @property
    def loop(self) -> Optional["Loop"]:
        return self.loops[-1] if self.loops else None

    def within(self, node: cst.CSTNode, branch: Optional[str] = None) -> bool:
        return any(n is node and (branch is None or b == branch) for n, b in self.path)

    def compatible(self, other: "Stmt") -> bool:
        """False when the two sit on different branches of one `if` (they never both run)."""
        branches = {id(node): branch for node, branch in self.path}
        return all(branches.get(id(node), branch) == branch for node, branch in other.path)


@dataclass(eq=False, repr=False)
class Definition:
    name: str
    kind: str  # assign, aug, inplace, unpack, for, with, param
    value: Optional[cst.BaseExpression]
    stmt: Stmt
    op: Optional[str] = None  # the operator of an augmented assignment or the in-place method
    index: tuple[int, ...] = ()  # position inside an unpacked tuple target

    @property
    def order(self) -> int:
        return self.stmt.order


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
    call: cst.Call
    stmt: Stmt
    context_manager: bool = False  # used as a `with` item


@dataclass(eq=False, repr=False)
class Loop:
    node: LoopNode
    header: Stmt
    scope: Scope
    parent: Optional["Loop"]
    targets: tuple[str, ...] = ()
    iter_expr: Optional[cst.BaseExpression] = None
    first_order: int = 0
    last_order: int = 0
    implicit: bool = False  # a framework hook called once per micro-batch (Lightning training_step)

    def contains(self, stmt: Stmt) -> bool:
        return any(loop is self for loop in stmt.loops)

    @property
    def body(self) -> list[cst.BaseStatement]:
        return list(self.node.body.body)


@dataclass
class Collected:
    module: cst.Module
    scopes: list[Scope]
    imports: dict[str, str]  # local alias -> dotted origin
    classes: dict[str, cst.ClassDef]
    functions: dict[str, list[Scope]]  # simple name -> scopes defining it


def _target_names(target: cst.BaseExpression, prefix: tuple[int, ...] = ()) -> list[tuple[str, tuple[int, ...]]]:
    if isinstance(target, (cst.Tuple, cst.List)):
        found = []
        for i, element in enumerate(target.elements):
            value = element.value
            if isinstance(element, cst.StarredElement):
                continue
            found.extend(_target_names(value, prefix + (i,)))
        return found
    name = dotted(target)
    return [(name, prefix)] if name else []


class _Collector:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.order = 0
        self.seq = 0
        self.scopes: list[Scope] = []
        self.imports: dict[str, str] = {}
        self.classes: dict[str, cst.ClassDef] = {}
        self.functions: dict[str, list[Scope]] = {}

    # --- statements -------------------------------------------------------------------
    def run(self) -> Collected:
        root = Scope(node=self.module, name="<module>", parent=None)
        self.scopes.append(root)
        self._block(self.module.body, root, (), (), False)
        return Collected(self.module, self.scopes, self.imports, self.classes, self.functions)

    def _stmt(self, node, line, scope, path, loops, no_grad) -> Stmt:
        self.order += 1
        stmt = Stmt(node, line, self.order, path, scope, loops, no_grad)
        scope.stmts.append(stmt)
        return stmt

    def _block(self, body, scope, path, loops, no_grad) -> None:
        for statement in body:
            self._statement(statement, scope, path, loops, no_grad)

    def _suite(self, suite, scope, path, loops, no_grad) -> None:
        if isinstance(suite, cst.IndentedBlock):
            self._block(suite.body, scope, path, loops, no_grad)
        elif isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                stmt = self._stmt(small, suite, scope, path, loops, no_grad)
                self._small(small, stmt)

    def _statement(self, node, scope, path, loops, no_grad) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                stmt = self._stmt(small, node, scope, path, loops, no_grad)
                self._small(small, stmt)
        elif isinstance(node, cst.FunctionDef):
            self._function(node, scope, path, loops, no_grad)
        elif isinstance(node, cst.ClassDef):
            self.classes[node.name.value] = node
            header = self._stmt(node, node, scope, path, loops, no_grad)
            for base in node.bases:
                self._read(base, header)
            self._suite(node.body, scope, path + ((node, "body"),), loops, no_grad)
        elif isinstance(node, (cst.For, cst.While)):
            self._loop(node, scope, path, loops, no_grad)
        elif isinstance(node, cst.If):
            header = self._stmt(node, node, scope, path, loops, no_grad)
            self._read(node.test, header)
            self._suite(node.body, scope, path + ((node, "body"),), loops, no_grad)
            if node.orelse is not None:
                if isinstance(node.orelse, cst.If):
                    self._statement(node.orelse, scope, path + ((node, "orelse"),), loops, no_grad)
                else:
                    self._suite(node.orelse.body, scope, path + ((node, "orelse"),), loops, no_grad)
        elif isinstance(node, cst.With):
            self._with(node, scope, path, loops, no_grad)
        elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            self._suite(node.body, scope, path + ((node, "body"),), loops, no_grad)
            for handler in node.handlers:
                self._suite(handler.body, scope, path + ((handler, "body"),), loops, no_grad)
            if node.orelse is not None:
                self._suite(node.orelse.body, scope, path + ((node, "orelse"),), loops, no_grad)
            if node.finalbody is not None:
                self._suite(node.finalbody.body, scope, path + ((node, "finally"),), loops, no_grad)
        elif isinstance(node, cst.Match):
            header = self._stmt(node, node, scope, path, loops, no_grad)
            self._read(node.subject, header)
            for case in node.cases:
                self._suite(case.body, scope, path + ((case, "body"),), loops, no_grad)
        else:  # anything new in the grammar: read it, do not descend
            self._stmt(node, node, scope, path, loops, no_grad)

    def _function(self, node: cst.FunctionDef, scope, path, loops, no_grad) -> None:
        header = self._stmt(node, node, scope, path, loops, no_grad)
        for decorator in node.decorators:
            self._read(decorator.decorator, header)
        class_node = next((n for n, _ in reversed(path) if isinstance(n, cst.ClassDef)), None)
        inner_no_grad = no_grad or any(
            (dotted(d.decorator.func) if isinstance(d.decorator, cst.Call) else dotted(d.decorator) or "")
            .rsplit(".", 1)[-1] in NO_GRAD_CONTEXTS
            for d in node.decorators
        )
        inner = Scope(
            node=node,
            name=node.name.value,
            parent=scope,
            class_node=class_node if class_node is not None and path and path[-1][0] is class_node else None,
            class_bases=tuple(
                dotted(base.value) or "" for base in (class_node.bases if class_node is not None else ())
            ),
            no_grad=inner_no_grad,
        )
        self.scopes.append(inner)
        self.functions.setdefault(node.name.value, []).append(inner)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            inner.params.append(param.name.value)
        for param in (params.star_arg, params.star_kwarg):
            if isinstance(param, cst.Param):
                inner.params.append(param.name.value)
        param_stmt = self._stmt(node, node, inner, (), (), inner_no_grad)
        for name in inner.params:
            self._define(Definition(name, "param", None, param_stmt))
        loops_inside: tuple[Loop, ...] = ()
        if inner.is_lightning_training_step:
            # Lightning calls training_step once per micro-batch: its body is one loop iteration.
            hook = Loop(node=node, header=param_stmt, scope=inner, parent=None, implicit=True)
            hook.first_order = self.order + 1
            inner.loops.append(hook)
            loops_inside = (hook,)
        self._suite(node.body, inner, (), loops_inside, inner_no_grad)
        if loops_inside:
            loops_inside[0].last_order = self.order

    def _loop(self, node, scope, path, loops, no_grad) -> None:
        header = self._stmt(node, node, scope, path, loops, no_grad)
        loop = Loop(node=node, header=header, scope=scope, parent=loops[-1] if loops else None)
        if isinstance(node, cst.For):
            loop.iter_expr = node.iter
            self._read(node.iter, header)
            names = _target_names(node.target)
            loop.targets = tuple(name for name, _ in names)
        else:
            self._read(node.test, header)
        scope.loops.append(loop)
        inner_loops = loops + (loop,)
        loop.first_order = self.order + 1
        if isinstance(node, cst.For):
            # The loop target is written at the top of every iteration.
            target_stmt = self._stmt(node, node, scope, path + ((node, "body"),), inner_loops, no_grad)
            for name, index in _target_names(node.target):
                self._define(Definition(name, "for", node.iter, target_stmt, index=index))
                self._occur(name, True, False, False, target_stmt)
        self._suite(node.body, scope, path + ((node, "body"),), inner_loops, no_grad)
        loop.last_order = self.order
        if node.orelse is not None:
            self._suite(node.orelse.body, scope, path + ((node, "orelse"),), loops, no_grad)

    def _with(self, node: cst.With, scope, path, loops, no_grad) -> None:
        header = self._stmt(node, node, scope, path, loops, no_grad)
        inner_no_grad = no_grad
        for item in node.items:
            self._read(item.item, header, context_manager=True)
            if isinstance(item.item, cst.Call):
                name = dotted(item.item.func) or ""
                last = name.rsplit(".", 1)[-1]
                if last in NO_GRAD_CONTEXTS:
                    inner_no_grad = True
                if last == "set_grad_enabled" and item.item.args and isinstance(
                    item.item.args[0].value, cst.Name
                ) and item.item.args[0].value.value == "False":
                    inner_no_grad = True
            if item.asname is not None:
                for name, index in _target_names(item.asname.name):
                    self._define(Definition(name, "with", item.item, header, index=index))
                    self._occur(name, True, False, False, header)
        self._suite(node.body, scope, path + ((node, "body"),), loops, inner_no_grad)

    # --- small statements --------------------------------------------------------------
    def _small(self, node: cst.BaseSmallStatement, stmt: Stmt) -> None:
        if isinstance(node, cst.Assign):
            self._read(node.value, stmt)
            for target in node.targets:
                self._assign_target(target.target, node.value, stmt)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self._read(node.value, stmt)
                self._assign_target(node.target, node.value, stmt)
        elif isinstance(node, cst.AugAssign):
            self._read(node.value, stmt)
            name = dotted(node.target)
            if name is not None:
                self._occur(name, False, False, False, stmt)
                op = type(node.operator).__name__
                self._define(Definition(name, "aug", node.value, stmt, op=op))
                self._occur(name, True, False, False, stmt)
            else:
                self._read(node.target, stmt)
        elif isinstance(node, cst.Expr):
            self._read(node.value, stmt)
            call = node.value
            if isinstance(call, cst.Call):
                receiver, method = method_of(call)
                name = dotted(receiver) if receiver is not None else None
                if name is not None and method is not None and method.endswith("_"):
                    self._define(Definition(name, "inplace", call, stmt, op=method))
        elif isinstance(node, cst.Return):
            if node.value is not None:
                self._read(node.value, stmt)
                stmt.scope.returns.append((node.value, stmt))
        elif isinstance(node, cst.Import):
            for alias in node.names:
                origin = dotted(alias.name) or ""
                if alias.asname is not None:
                    self.imports[dotted(alias.asname.name) or origin] = origin
                else:
                    self.imports.setdefault(origin.split(".")[0], origin.split(".")[0])
        elif isinstance(node, cst.ImportFrom):
            module_name = dotted(node.module) if node.module is not None else ""
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    origin = dotted(alias.name) or ""
                    local = dotted(alias.asname.name) if alias.asname is not None else origin
                    self.imports[local or origin] = f"{module_name}.{origin}" if module_name else origin
        else:
            self._read(node, stmt)

    def _assign_target(self, target, value, stmt) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for name, index in _target_names(target):
                self._define(Definition(name, "unpack", value, stmt, index=index))
                self._occur(name, True, False, False, stmt)
            return
        name = dotted(target)
        if name is not None:
            self._define(Definition(name, "assign", value, stmt))
            self._occur(name, True, False, False, stmt)
        else:  # x[i] = v, obj.f().g = v: the container is read, not rebound
            self._read(target, stmt)

    # --- expressions ---------------------------------------------------------------------
    def _define(self, definition: Definition) -> None:
        definition.stmt.scope.defs.setdefault(definition.name, []).append(definition)

    def _occur(self, name, write, detached, in_arg, stmt) -> None:
        self.seq += 1
        stmt.scope.occurrences.append(Occurrence(name, write, detached, in_arg, stmt, self.seq))


    def _read(self, node: cst.CSTNode, stmt: Stmt, detached=False, in_arg=False, context_manager=False) -> None:
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted(node)
            if name is not None:
                self._occur(name, False, detached, in_arg, stmt)
                return
        if isinstance(node, cst.Call):
            stmt.scope.calls.append(CallSite(node, stmt, context_manager))
            receiver, method = method_of(node)
            func_name = (dotted(node.func) or "").rsplit(".", 1)[-1].lower()
            if receiver is not None and method in DETACH_METHODS:
                self._read(receiver, stmt, True, in_arg)
            else:
                if receiver is not None:
                    self._read(receiver, stmt, detached, in_arg)
                else:
                    self._read(node.func, stmt, detached, False)
                args_detached = detached or any(h in func_name for h in DETACH_FUNCTION_HINTS)
                for arg in node.args:
                    self._read(arg.value, stmt, args_detached, True)
            return
        if isinstance(node, cst.Lambda):
            return
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            self._read_comprehension(node, stmt, detached, in_arg)
            return
        for child in node.children:
            self._read(child, stmt, detached, in_arg)

    def _read_comprehension(self, node, stmt, detached, in_arg) -> None:
        # `tuple(h.detach() for h in hidden)` detaches `hidden`: the element expression decides.
        element = node.elt if not isinstance(node, cst.DictComp) else node.value
        element_detached = detached
        if isinstance(element, cst.Call):
            receiver, method = method_of(element)
            element_detached = detached or method in DETACH_METHODS
        comp = node.for_in
        while comp is not None:
            self._read(comp.iter, stmt, element_detached, in_arg)
            comp = comp.inner_for_in
        if not element_detached:
            self._read(element, stmt, detached, in_arg)


def collect(module: cst.Module) -> Collected:
    return _Collector(module).run()
