"""Which function a call runs, when the code shows it: a closure, a module function, a method of
the class or its bases within the project (`self.m()`, `super().m()`), a function imported from a
local module, a `functools.partial` of those. Anything else is unknown (None), and rules that
need the callee's facts stay silent."""

from __future__ import annotations

import ast
import copy
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Union, cast

from accumlint.analysis.collect import CallSite, Collected, Scope, collect, enclosing_class
from accumlint.analysis.exprs import MODULE_RETURNING_METHODS, class_like, dotted, is_constant, is_string, keyword, last_part, positional, without_module_moves
from accumlint.frameworks import constructed_role
from accumlint.project import file_digest
from accumlint.source import SourceText

if TYPE_CHECKING:
    from accumlint.analysis.dataflow import DataFlow
    from accumlint.analysis.events import Event, EventKind
    from accumlint.analysis.roles import Roles
    from accumlint.analysis.windows import Window
    from accumlint.project import ProjectIndex

_MAX_DEPTH = 8
# Wrappers whose forward runs the wrapped module's forward on each device's share of the batch.
_DATA_PARALLEL = frozenset({"DataParallel", "DistributedDataParallel", "FullyShardedDataParallel"})


def _held_instance(resolver: "Resolver", element: ast.expr, scope: Scope) -> Optional[set[str]]:
    """The project class of an instance a function returns (`scheduled_optim`, `Meter()`)."""
    name = dotted(element)
    if isinstance(element, ast.Call):
        found = resolver.built_class(element, scope)
    else:
        found = resolver.instance_class(name, scope) if name is not None else None
    return {found} if found is not None else None


def _module_itself(value: ast.expr) -> ast.expr:
    """`Net(...).cuda().train()` -> `Net(...)`: the object such calls hand back unchanged."""
    while (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_RETURNING_METHODS and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value


@dataclass(frozen=True, eq=False)
class Callee:
    scope: Scope
    module: "AnalysedModule"


class AnalysedModule:
    """One module's collected facts, roles and direct events, and a resolver for its calls."""

    def __init__(
        self, collected: Collected, path: Optional[Path], index: Optional[ProjectIndex], source: Optional[SourceText] = None
    ) -> None:
        from accumlint.analysis.dataflow import DataFlow
        from accumlint.analysis.events import direct_events
        from accumlint.analysis.roles import infer_roles

        self.collected = collected
        self.path = path
        self.index = index
        self.source = source
        self.roles: Roles = infer_roles(collected)
        self.direct: dict[int, list[Event]] = direct_events(collected, self.roles)
        self.resolver = Resolver(self)
        self.flow: DataFlow = DataFlow(collected, self.resolver)
        self.top_functions = {
            s.name: s for s in collected.scopes if s.parent is not None and s.parent.parent is None and s.class_node is None
        }
        self.consulted: set[Path] = set()  # the project's module files its calls were looked up in
        self._windows: dict[int, tuple[list[Event], list[Window]]] = {}

    def windows_of(self, scope: Scope) -> tuple[list[Event], list[Window]]:
        """A function's events and accumulation windows, worked out on first use (a caller in
        another module asks what the function it hands a model to does with it)."""
        known = self._windows.get(id(scope))
        if known is None:
            known = self._windows[id(scope)] = self._read_windows(scope)
        return known

    def windows_handed(self, scope: Scope, classes: dict[str, str]) -> tuple[list[Event], list[Window]]:
        """`windows_of` as one caller runs the function: its parameters named in `classes` hold
        instances of those project classes (`train_one_epoch(..., loss_scaler)` with
        `loss_scaler = NativeScaler()` in another module's `main()`). Not remembered."""
        if not classes:
            return self.windows_of(scope)
        with self.resolver.handed(scope, classes):
            return self._read_windows(scope)

    def _read_windows(self, scope: Scope) -> tuple[list[Event], list[Window]]:
        from accumlint.analysis.events import scope_events
        from accumlint.analysis.windows import find_windows

        events = scope_events(scope, self.direct, self.resolver)
        return events, find_windows(scope, events, self.resolver.gate_of, self.resolver.imported_constant)

    def dependencies(self) -> dict[str, str]:
        """Every project module whose text the facts of this one rest on (following the modules
        it consulted, and theirs), with its content hash: a cached result is stale when one of
        them changed."""
        found: dict[str, str] = {}
        pending = [self]
        seen: set[int] = set()
        while pending:
            module = pending.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            for path in module.consulted:
                local = module.index.read_before(path) if module.index is not None else None
                found[str(path)] = local.digest if local is not None else file_digest(path)
                other = _ANALYSED.get(id(local)) if local is not None else None
                if other is not None and other[0] is local:
                    pending.append(other[1])
        return found


_ANALYSED: dict[int, tuple[object, AnalysedModule]] = {}


def analysed(index: ProjectIndex, path: Path) -> Optional[AnalysedModule]:
    """A local module, analysed once per parse (the index re-parses it only when it changes)."""
    module = index.module(path)
    if module is None:
        return None
    known = _ANALYSED.get(id(module))
    if known is None or known[0] is not module:
        analysis = AnalysedModule(collect(module.tree), module.path, index, SourceText(module.text))
        known = _ANALYSED[id(module)] = (module, analysis)
    return known[1]


def analysed_as_read(index: ProjectIndex, path: Path, tree: ast.Module) -> Optional[AnalysedModule]:
    """The analysis of a module the index already read and analysed for another file's calls,
    when `tree` is the tree it was read into (so the text is the same); never reads."""
    local = index.read_already(path)
    known = _ANALYSED.get(id(local)) if local is not None and local.tree is tree else None
    return known[1] if known is not None and known[0] is local else None


class _Bind(ast.NodeTransformer):
    """Put the call's arguments where the helper reads its parameters."""

    def __init__(self, bound: dict[str, ast.expr], params: set[str]) -> None:
        self.bound = bound
        self.params = params

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.bound:
            return self.bound[node.id]
        return node


def bound_arguments(call: ast.Call, callee: Callee) -> Optional[dict[str, ast.expr]]:
    """What the call passes for each parameter of `callee` (None when it unpacks `*args`, whose
    positions cannot be read). A method's `self`/`cls` is no argument: the call is bound, or a
    constructor."""
    params = list(callee.scope.params)
    if callee.scope.class_node is not None and params[:1] in (["self"], ["cls"]):
        params = params[1:]
    bound: dict[str, ast.expr] = {}
    for position, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return None
        if position < len(params):
            bound[params[position]] = argument
    for given in call.keywords:
        if given.arg is not None and given.arg in callee.scope.params:
            bound[given.arg] = given.value
    return bound


def _abstract(node: ast.AST) -> bool:
    """A method left to subclasses: `@abstractmethod`, or a body (after its docstring) that only
    raises `NotImplementedError`."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if any(last_part(dotted(d)) == "abstractmethod" for d in node.decorator_list):
        return True
    body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) and is_string(node.body[0].value) else node.body
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return last_part(dotted(raised)) == "NotImplementedError"


def bind_arguments(call: ast.Call, callee: Callee, expr: ast.expr) -> Optional[ast.expr]:
    """`expr`, read in the callee, with the callee's parameters replaced by what the call passes
    (a copy; None when the call unpacks `*args`)."""
    bound = bound_arguments(call, callee)
    if bound is None:
        return None
    return _Bind(bound, set(callee.scope.params)).visit(copy.deepcopy(expr))


def _built_class(value: ast.expr, at) -> Optional[str]:
    """`return Meter(...)`, or `m = Meter(...); return m`: the class-like name that builds it."""
    if isinstance(value, ast.Name):
        found = [d for d in at.scope.definitions(value.id) if d.order < at.order]
        if len(found) != 1 or found[0].kind != "assign" or found[0].value is None:
            return None
        value = found[0].value
    value = _module_itself(value)
    if isinstance(value, ast.Call) and class_like(dotted(value.func)):
        return dotted(value.func)
    return None


def _annotated_class(annotation: Optional[ast.expr]) -> Optional[str]:
    """`Trainer`, `"Trainer"`, `Optional[Trainer]`: the class an annotation names."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and dotted(annotation.value) in {"Optional", "typing.Optional"}:
        annotation = annotation.slice
    name = dotted(annotation) if annotation is not None else None
    return name if class_like(name) else None


def _parameter_annotation(function: ast.AST, name: str) -> Optional[ast.expr]:
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    args = function.args
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if arg.arg == name:
            return arg.annotation
    return None


def _class_annotation(cls: ast.ClassDef, attr: str) -> Optional[str]:
    """`updater: Updater` in the class body."""
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == attr:
            return _annotated_class(node.annotation)
    return None


_GRAD_OFF_CONTEXTS = frozenset({"no_grad", "inference_mode"})


def _flag_passed_true(test: ast.expr, call: ast.Call, init: Optional[Callee]) -> bool:
    """`if self.no_grad:` in a context manager's `__enter__`, with `self.no_grad = no_grad` in its
    `__init__` and `no_grad=True` written at the call."""
    flag = dotted(test)
    if init is None or flag is None or not flag.startswith("self."):
        return False
    for definition in init.scope.definitions(flag):
        param = dotted(definition.value) if definition.value is not None else None
        if param in init.scope.params and is_constant(keyword(call, param), True):
            return True
    return False


def _endless_generator(function: ast.AST) -> bool:
    """A generator whose body holds a `while True:` that nothing leaves (no `break`, no `return`)."""
    for loop in getattr(function, "body", []):
        if isinstance(loop, ast.While) and isinstance(loop.test, ast.Constant) and loop.test.value is True:
            inner = [n for n in ast.walk(loop) if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
            leaves = any(isinstance(n, (ast.Break, ast.Return)) for n in inner)
            if not leaves and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in inner):
                return True
    return False


class Resolver:
    def __init__(self, module: AnalysedModule) -> None:
        self.module = module
        self._children: dict[tuple[int, str], Scope] = {}
        for scope in module.collected.scopes:
            if scope.parent is not None and scope.class_node is None:
                self._children.setdefault((id(scope.parent), scope.name), scope)
        self._methods: dict[tuple[int, str], Scope] = {}
        for scope in module.collected.scopes:
            if scope.class_node is not None:
                self._methods.setdefault((id(scope.class_node), scope.name), scope)
        self._kinds: dict[int, frozenset[EventKind]] = {}
        self._busy: set[int] = set()
        self._origins: dict[str, Optional[tuple[Path, str]]] = {}
        self._instances: dict[tuple[int, str], Optional[str]] = {}
        self._busy_params: set[tuple[int, str]] = set()  # parameters whose callers are being read
        self._sites: Optional[dict[str, list[CallSite]]] = None
        # classes another module's factory returns (`self.loss_fn = create_loss(cfg)`), by the
        # token instance_class gives them: (that module's resolver, the class's name there)
        self._foreign: dict[str, tuple["Resolver", str]] = {}
        # (function, parameter) -> class token, while a function is read as one caller runs it
        self._handed: dict[tuple[int, str], str] = {}

    # --- resolution ----------------------------------------------------------------------
    def resolve(self, call: ast.Call, scope: Scope, depth: int = 0) -> Optional[Callee]:
        if depth > _MAX_DEPTH:
            return None
        func = call.func
        if isinstance(func, ast.Name):
            return self._name(func.id, scope, depth)
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
            cls = enclosing_class(scope)
            if cls is None or cls.class_node is None:
                return None
            found = self.method(cls.class_node, func.attr, depth)
            if found is None:  # `self.loss_scaler(loss, opt)` with `self.loss_scaler = NativeScaler()`
                instance_of = self.instance_class(f"{owner.id}.{func.attr}", scope)
                if instance_of is not None:
                    return self._class_method(instance_of, "__call__", depth)
            return found
        if isinstance(owner, ast.Call) and dotted(owner.func) == "super":
            cls = enclosing_class(scope)
            return self._in_bases(cls.class_node, func.attr, depth) if cls and cls.class_node else None
        name = dotted(owner)
        if name is None:
            return None
        local_class = self.module.collected.classes.get(name)
        if local_class is not None:  # `Trainer.step(self)`
            return self.method(local_class, func.attr, depth)
        instance_of = self.instance_class(name, scope)
        if instance_of is not None:  # `self.updater.step()` with `self.updater = Updater(...)`
            return self._class_method(instance_of, func.attr, depth)
        chosen = self._registry_method(name, func.attr, scope, depth)
        if chosen is not None:
            return chosen
        return self._imported(f"{name}.{func.attr}", depth)

    def _registry_method(self, name: str, attr: str, scope: Scope, depth: int) -> Optional[Callee]:
        """`trainer = TRAINERS[args.task](args)` with `TRAINERS = {"bert": BertTrainer, ...}` a
        module-level dict of this module's classes: the method `attr` when every class in the dict
        runs the same one (subclasses that inherit `train` from their base)."""
        definitions = scope.definitions(name)
        if len(definitions) != 1 or definitions[0].kind != "assign":
            return None
        value = definitions[0].value
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Subscript) and isinstance(value.func.value, ast.Name)):
            return None
        tables = self.module.collected.scopes[0].definitions(value.func.value.id)
        if len(tables) != 1 or tables[0].kind != "assign" or not isinstance(tables[0].value, ast.Dict):
            return None
        classes = self.module.collected.classes
        callees = []
        for entry in tables[0].value.values:
            cls = classes.get(entry.id) if isinstance(entry, ast.Name) else None
            callee = self.method(cls, attr, depth + 1) if cls is not None else None
            if callee is None:
                return None
            callees.append(callee)
        if not callees or any(c.scope is not callees[0].scope for c in callees):
            return None
        return callees[0]

    def left_to_subclasses(self, call: ast.Call, scope: Scope) -> bool:
        """`self.forward_propagation(batch)` where the class's own method only raises
        `NotImplementedError` (or is an `@abstractmethod`): a subclass's override runs, so what
        the call returns is unknown."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in {"self", "cls"}):
            return False
        cls = enclosing_class(scope)
        if cls is None or cls.class_node is None:
            return False
        found = self.method(cls.class_node, func.attr, 0)
        return found is not None and _abstract(found.scope.node)

    def constructor(self, call: ast.Call, scope: Scope) -> Optional[Callee]:
        """`Trainer(model, ...)` of a project class: the `__init__` it runs (its own or a base's)."""
        name = dotted(call.func)
        if name is None or not class_like(name) or not self._project_class(name):
            return None
        return self._class_method(name, "__init__", 0)

    def _class_method(self, cls: str, name: str, depth: int) -> Optional[Callee]:
        foreign = self._foreign.get(cls)
        if foreign is not None:
            return foreign[0]._class_method(foreign[1], name, depth + 1)
        local_class = self.module.collected.classes.get(cls)
        if local_class is not None:
            return self.method(local_class, name, depth)
        return self._imported(f"{cls}.{name}", depth)

    def instance_class(self, name: str, scope: Scope) -> Optional[str]:
        """The project class `name` holds an instance of, when the code shows one and only one:
        `x = Meter()` in sight, `self.x = Updater(...)` in any method of the class, a parameter
        annotated `x: Trainer`. None for anything else (a library object, two classes, a value
        handed in unannotated). Remembered per scope."""
        key = (id(scope), name)
        if key not in self._instances:
            self._instances[key] = None  # while it is being found: a cycle of factories finds nothing
            self._instances[key] = self._find_instance_class(name, scope)
        return self._instances[key]

    def _find_instance_class(self, name: str, scope: Scope) -> Optional[str]:
        head, _, rest = name.partition(".")
        if head in {"self", "cls"}:
            if "." in rest:
                return None
            owner = enclosing_class(scope)
            if owner is None or owner.class_node is None:
                return None
            definitions = [d for s in scope.binding_scopes(name) for d in s.definitions(name)]
            annotated = _class_annotation(owner.class_node, rest)
        elif rest:
            return None
        else:
            definitions = next(  # the innermost scope that binds it
                (s.definitions(name) for s in scope.binding_scopes(name) if s.definitions(name)), []
            )
            annotated = None
        classes: set[str] = set()
        for definition in definitions:
            value = _module_itself(definition.value) if definition.value is not None else None
            if definition.kind == "param":
                found = _annotated_class(_parameter_annotation(definition.stmt.node, definition.name))
                if found is None:
                    found = self._handed.get((id(definition.stmt.scope), definition.name))
                if found is None:
                    found = self._class_from_callers(definition.name, definition.stmt.scope)
                if found is None:
                    return None
                classes.add(found)
            elif definition.kind == "assign" and isinstance(value, ast.Constant) and value.value is None:
                continue  # `self.x = None` until it is built
            elif definition.kind == "assign" and isinstance(value, ast.Call):
                made = self._call_class(value, definition.stmt.scope)
                if made is None:
                    return None
                classes.add(made)
            elif definition.kind == "unpack" and isinstance(value, ast.Call) and len(definition.index) == 1:
                # `model, optimizer = get_model(args, train=True)` of a project factory
                unpacked = self._returned_in_place(value, definition.index[0], definition.stmt.scope, _held_instance)
                if unpacked is None:
                    return None
                classes |= unpacked
            else:
                return None
        if annotated is not None:
            classes.add(annotated)
        cls = self._one_class(classes)
        return cls if cls is not None and self._of_project(cls) else None

    def _one_class(self, classes: set[str]) -> Optional[str]:
        """The one class these names all name (`optimizers: Optimizers` imported here, and the token
        for the class a factory of its module returns, are one class); None for two classes."""
        if len(classes) <= 1:
            return next(iter(classes), None)
        identities = {self._class_identity(cls) for cls in classes}
        if len(identities) != 1 or None in identities:
            return None
        return min(classes, key=lambda cls: (cls in self._foreign, cls))  # a name this module reads

    def _class_identity(self, cls: str, depth: int = 0) -> Optional[tuple[int, str]]:
        """The module that defines the class a name (or another module's token) stands for, and
        its name there."""
        if depth > _MAX_DEPTH:
            return None
        if cls in self._foreign:
            resolver, name = self._foreign[cls]
            return resolver._class_identity(name, depth + 1)
        if cls in self.module.collected.classes:
            return id(self.module), cls
        found = self._imported_class(cls, depth)
        return (id(found[0].module), found[1].name) if found is not None else None

    def model_class(self, name: str, scope: Scope, depth: int = 0) -> Optional[str]:
        """The project module class whose `forward` calling `name` runs: the class it holds an
        instance of, or the one model that each binding of it renames, moves or wraps in data
        parallelism (`para_model = nn.DataParallel(model)` on one branch and `para_model =
        model.to(device)` on the other; `model = DDP(model)`): such a wrapper runs the forward of
        the module it wraps."""
        found = self.instance_class(name, scope)
        if found is not None and not self._data_parallel(found):
            return found
        head, _, rest = name.partition(".")
        if "." in rest or rest and head != "self" or depth > _MAX_DEPTH:
            return found  # only plain names and the object's own attributes are followed
        if rest:  # `self.model = nn.DataParallel(model)` in `__init__`, `self.model(x)` in a step method
            definitions = [d for s in scope.binding_scopes(name) for d in s.definitions(name)]
        else:
            definitions = next((s.definitions(name) for s in scope.binding_scopes(name) if s.definitions(name)), [])
        classes: set[str] = set()
        for definition in definitions:
            if definition.kind == "unpack" and isinstance(definition.value, ast.Call) and len(definition.index) == 1:
                made = self._model_unpacked(definition.value, definition.index[0], definition.stmt.scope, depth)
            elif definition.kind != "assign" or definition.value is None:
                return None
            else:
                made = self._model_made(definition.value, name, definition.stmt.scope, depth)
            if made is None:
                return None
            classes |= made
        return classes.pop() if len(classes) == 1 else None

    def _model_made(self, value: ast.expr, name: str, scope: Scope, depth: int) -> Optional[set[str]]:
        """The model classes one binding of `name` hands on (empty for `model = DDP(model)`, which
        keeps what `name` held); None when it shows no project model."""
        value = without_module_moves(value)
        held_name = dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        if held_name is not None:
            if held_name == name:
                return set()
            held = self.model_class(held_name, scope, depth + 1)
            return {held} if held is not None else None
        if not isinstance(value, ast.Call):
            return None
        if self.canonical(dotted(value.func) or "") == "torch.load":
            return set()  # `model = torch.load(f)` on a resume branch: the model this script saved
        if not self._data_parallel(dotted(value.func) or ""):
            built = self.built_class(value, scope)
            return {built} if built is not None else None
        wrapped = [self._model_made(arg, name, scope, depth + 1) for arg in [*value.args, *(kw.value for kw in value.keywords if kw.arg == "module")]
                   if isinstance(arg, (ast.Name, ast.Attribute, ast.Call))]
        classes = [made for made in wrapped if made is not None]
        return classes[0] if len(classes) == 1 else None

    def canonical(self, name: str) -> str:
        """A name with its first part read through this module's imports (`DDP` ->
        `torch.nn.parallel.DistributedDataParallel`, `grad` -> `torch.autograd.grad`)."""
        head, dot, rest = name.partition(".")
        origin = self.module.collected.imports.get(head)
        return f"{origin}{dot}{rest}" if origin else name

    def _model_unpacked(self, call: ast.Call, index: int, scope: Scope, depth: int) -> Optional[set[str]]:
        """`self.model, self.optim = self._setup_models()`: the model the project function returns
        in that place (`return model, optim` with `model = VoiceModel(args)`, or `DDP(model)`)."""
        return self._returned_in_place(call, index, scope, lambda r, element, at: r._model_made(element, "", at, depth + 1))

    def _returned_in_place(
        self, call: ast.Call, index: int, scope: Scope,
        read: Callable[["Resolver", ast.expr, Scope], Optional[set[str]]],
    ) -> Optional[set[str]]:
        """The one class `read` finds at `index` of every tuple the project function the call runs
        returns (a return that is no tuple, `return model` on an evaluation path, is another use),
        by the names this module gives it; None when it finds none, or more than one."""
        callee = self.resolve(call, scope, _MAX_DEPTH - 1)
        if callee is None:
            return None
        resolver = callee.module.resolver
        classes: set[str] = set()
        for value, stmt in callee.scope.returns:
            if not isinstance(value, ast.Tuple):
                continue
            if index >= len(value.elts) or any(isinstance(e, ast.Starred) for e in value.elts[: index + 1]):
                return None
            made = read(resolver, value.elts[index], stmt.scope)
            if made is None or len(made) != 1:
                return None
            classes |= {self.foreign_class(resolver, c) for c in made}
        return classes if len(classes) == 1 else None

    def _data_parallel(self, name: str) -> bool:
        """`nn.DataParallel`, `DDP` imported as such, or a project class built on one
        (`class BalancedDataParallel(DataParallel)`, whose own forward still splits the batch, runs
        the wrapped module on each part and gathers what it returns)."""
        return self.built_on(name, _DATA_PARALLEL)

    def built_on(self, name: str, library_classes: frozenset[str]) -> bool:
        """The called name is one of these library classes (by its last part, read through the
        imports), or a project class built on one, here or in another module of the project."""
        if last_part(self.canonical(name)) in library_classes:
            return True
        return class_like(name) and any(last_part(base) in library_classes for base in self.class_library_bases(name))

    def built_class(self, call: ast.Call, scope: Scope) -> Optional[str]:
        """The project class a call builds (`Scaler()`, or a project factory that returns one), by
        the name instance_class gives it; None for anything else."""
        built = _module_itself(call)
        made = self._call_class(built if isinstance(built, ast.Call) else call, scope)
        return made if made is not None and self._of_project(made) else None

    def _call_class(self, call: ast.Call, scope: Scope) -> Optional[str]:
        """The class a call builds, by name: the class called (`Meter(...)`), or the one a project
        factory returns (`create_meter(cfg)`); None when it shows none."""
        name = dotted(call.func)
        return name if class_like(name) else self._factory_class(call, scope)

    def _of_project(self, cls: str) -> bool:
        """A class of the project, or one a caller in another module handed over."""
        return cls in self._foreign or self._project_class(cls)

    def _factory_class(self, call: ast.Call, scope: Scope) -> Optional[str]:
        """`create_loss_function(cfg)` of the project that returns an instance of one project class
        (its return annotation names it, or every return builds it): that class, as instance_class
        names it (a token when the class lives in the factory's module)."""
        callee = self.resolve(call, scope, _MAX_DEPTH - 1)
        if callee is None or not isinstance(callee.scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        made = _annotated_class(callee.scope.node.returns)
        if made is None:
            built = {_built_class(value, stmt) for value, stmt in callee.scope.returns}
            if len(built) != 1 or None in built:
                return None
            made = built.pop()
        resolver = callee.module.resolver
        if made is None or not resolver._project_class(made):
            return None
        return self.foreign_class(resolver, made)

    def foreign_class(self, resolver: "Resolver", cls: str) -> str:
        """The name `instance_class` gives here to the class another module's resolver calls `cls`
        (a token, remembered with that resolver, when the module is another)."""
        if resolver is self:
            return cls
        if cls in resolver._foreign:  # already a token there (a third module's class): keep it
            self._foreign[cls] = resolver._foreign[cls]
            return cls
        token = f"{resolver.module.path}::{cls}"
        self._foreign[token] = (resolver, cls)
        return token

    @contextmanager
    def handed(self, function: Scope, classes: dict[str, str]) -> Iterator[None]:
        """Read `function` as one caller runs it: each named parameter holds an instance of the
        class given (a name `instance_class` gives here). What is worked out meanwhile is
        forgotten after, so the function's own reading stays as it was."""
        saved = dict(self._instances), dict(self._kinds)
        self._instances = {key: found for key, found in self._instances.items() if key[0] != id(function)}
        self._handed = {(id(function), param): cls for param, cls in classes.items()}
        try:
            yield
        finally:
            self._handed = {}
            self._instances, self._kinds = saved

    def _class_from_callers(self, param: str, function: Scope) -> Optional[str]:
        """The class of what every call of `function` in this module passes for `param`, when they
        all pass an instance of the same project class (`train_one_epoch(..., loss_scaler)` with
        `loss_scaler = NativeScaler()` in `main`). A module function, or a method called through
        `self`; None when a call passes anything else, leaves the default, or there is no call."""
        params = list(function.params)
        if function.class_node is not None:
            if params[:1] != ["self"]:
                return None
            params, key = params[1:], f"self.{function.name}"
        elif function.parent is not None and function.parent.parent is None:
            key = function.name
        else:
            return None
        if param not in params or (id(function), param) in self._busy_params:
            return None
        index = params.index(param)
        sites = self._sites_by_callee().get(key, [])
        self._busy_params.add((id(function), param))
        try:
            classes: set[Optional[str]] = set()
            for site in sites:
                call, caller = site.call, site.stmt.scope
                if function.class_node is not None:
                    owner = enclosing_class(caller)
                    if owner is None or owner.class_node is not function.class_node:
                        return None
                if any(isinstance(arg, ast.Starred) for arg in call.args[: index + 1]):
                    return None
                value = call.args[index] if index < len(call.args) else next(
                    (kw.value for kw in call.keywords if kw.arg == param), None
                )
                name = dotted(value) if value is not None else None
                classes.add(self.instance_class(name, caller) if name is not None else None)
        finally:
            self._busy_params.discard((id(function), param))
        if len(classes) != 1 or None in classes:
            return None
        return classes.pop()

    def _sites_by_callee(self) -> dict[str, list[CallSite]]:
        """This module's call sites by the dotted name they call, built on first use."""
        if self._sites is None:
            self._sites = {}
            for scope in self.module.collected.scopes:
                for site in scope.calls:
                    name = dotted(site.call.func)
                    if name is not None:
                        self._sites.setdefault(name, []).append(site)
        return self._sites

    def _project_class(self, name: str) -> bool:
        """A class defined in this module or imported from a module of the project, and none the
        frameworks layer knows (checking Accelerate's own repository, `Accelerator` is local: its
        facts still come from what the framework does, not from reading its code)."""
        if constructed_role(last_part(name)) is not None:
            return False
        return name in self.module.collected.classes or self._local_origin(name) is not None

    def _name(self, name: str, scope: Scope, depth: int) -> Optional[Callee]:
        current: Optional[Scope] = scope
        while current is not None:  # closures first, then the module's own functions
            found = self._children.get((id(current), name))
            if found is not None:
                return Callee(found, self.module)
            alias = self._partial_target(name, current)
            if alias is not None:
                return self.resolve(alias, current, depth + 1)
            current = current.parent
        instance_of = self.instance_class(name, scope)
        if instance_of is not None:  # `loss_scaler(loss, optimizer)` with `loss_scaler = NativeScaler()`
            return self._class_method(instance_of, "__call__", depth)
        return self._imported(name, depth)

    def _partial_target(self, name: str, scope: Scope) -> Optional[ast.Call]:
        """`step = functools.partial(train_step, model)`: a call of `train_step`. `loss_fn = my_loss`,
        the one binding of the name, another name for a function: a call of `my_loss`."""
        definitions = scope.definitions(name)
        for definition in definitions:
            value = definition.value
            if definition.kind == "assign" and isinstance(value, ast.Call) and last_part(dotted(value.func)) == "partial":
                target = positional(value, 0)
                if target is not None:
                    return ast.Call(func=target, args=[], keywords=[])
        if len(definitions) == 1 and definitions[0].kind == "assign" and isinstance(definitions[0].value, ast.Name):
            if definitions[0].value.id != name:
                return ast.Call(func=definitions[0].value, args=[], keywords=[])
        return None

    def _local_origin(self, name: str) -> Optional[tuple[Path, str]]:
        """(module file, name in it) when `name` was imported from a module of the project.
        Remembered per name: every call through `torch.nn.functional` asks the same question."""
        if name not in self._origins:
            self._origins[name] = self._find_local_origin(name)
        return self._origins[name]

    def _find_local_origin(self, name: str) -> Optional[tuple[Path, str]]:
        head, _, rest = name.partition(".")
        collected = self.module.collected
        origin = collected.imports.get(head)
        index, path = self.module.index, self.module.path
        if index is None or path is None:
            return None
        if origin is None:
            return self._star_origin(name)
        level, relative_origin = collected.relative_imports.get(head, (0, origin))
        full = f"{relative_origin}.{rest}" if rest else relative_origin
        found = index.split(path, full, level)
        if found is not None:
            self._consulted(found[0])
        return found

    def _star_origin(self, name: str) -> Optional[tuple[Path, str]]:
        """(module file, name in it) for a name this module neither defines nor imports by name but
        takes from a project module through `from utils import *`: the last such module that
        defines it (or offers it the same way)."""
        head = name.partition(".")[0]
        if head in self.module.collected.classes or head in self.module.top_functions:
            return None
        self._origins[name] = None  # while it is looked for: two modules that star-import each other
        for found, module in self._star_modules():
            if head in module.collected.classes or head in module.top_functions:
                self._consulted(found)
                return found, name
            further = module.resolver._local_origin(name)
            if further is not None:
                return further
        return None

    def points_into_project(self, call: ast.Call) -> bool:
        """The call names something imported from the project's own modules (so, when it could
        not be resolved, what it does is unknown rather than a library's fresh value)."""
        name = dotted(call.func)
        return name is not None and self._local_origin(name) is not None

    def _imported(self, name: str, depth: int) -> Optional[Callee]:
        found = self._local_origin(name)
        if found is None or self.module.index is None:
            return None
        module = analysed(self.module.index, found[0])
        return module.resolver.exported(found[1], depth + 1) if module is not None else None

    def library_name(self, name: str, depth: int = 0) -> Optional[str]:
        """The library's dotted name behind a name taken from a project module that only imports
        it (`ext_dist.DDP`, where `extend_distributed` does `from torch.nn.parallel import
        DistributedDataParallel as DDP`): `torch.nn.parallel.DistributedDataParallel`."""
        memo = cast(
            "dict[tuple[str, int], Optional[str]]", self.module.collected.memo.setdefault("resolver.library_names", {})
        )
        key = (name, depth)
        if key not in memo:
            memo[key] = self._library_name(name, depth)
        return memo[key]

    def _library_name(self, name: str, depth: int) -> Optional[str]:
        found = self._local_origin(name)
        if found is None or depth > _MAX_DEPTH or self.module.index is None:
            return None
        module = analysed(self.module.index, found[0])
        inner = found[1]
        head, _, rest = inner.partition(".")
        if module is None or head in module.top_functions or head in module.collected.classes:
            return None  # the project's own
        if module.resolver._local_origin(inner) is not None:
            return module.resolver.library_name(inner, depth + 1)
        origin = module.collected.imports.get(head)
        if origin is None:
            return None
        return f"{origin}.{rest}" if rest else origin

    def exported(self, name: str, depth: int) -> Optional[Callee]:
        """A name this module offers to importers: its function, or a name it re-exports."""
        if depth > _MAX_DEPTH or not name:
            return None
        if name in self.module.top_functions:
            return Callee(self.module.top_functions[name], self.module)
        head, _, attr = name.partition(".")
        cls = self.module.collected.classes.get(head)
        if cls is not None and attr:
            return self.method(cls, attr, depth)
        return self._imported(name, depth) or self._star_exported(name, depth)

    def _star_exported(self, name: str, depth: int) -> Optional[Callee]:
        """`name` offered through `from .common_tools import *` at the top of this module (a
        package `__init__` gathering its submodules): the last such module that offers it."""
        for found, module in self._star_modules():
            callee = module.resolver.exported(name, depth + 1)
            if callee is not None:
                self._consulted(found)
                return callee
        return None

    def _star_modules(self) -> Iterator[tuple[Path, "AnalysedModule"]]:
        """The project modules this module imports with `from X import *` at its top, the last
        first (a later star import shadows an earlier one)."""
        index, path = self.module.index, self.module.path
        if index is None or path is None:
            return
        for node in reversed(self.module.collected.module.body):
            if not (isinstance(node, ast.ImportFrom) and node.module and any(a.name == "*" for a in node.names)):
                continue
            found = index.module_file(path, node.module, node.level)
            module = analysed(index, found) if found is not None else None
            if found is not None and module is not None:
                yield found, module

    def _consulted(self, path: Path) -> None:
        """Remember that this module's reading depends on the module at `path` (for the cache)."""
        index = self.module.index
        if index is not None:
            self.module.consulted.add(index.resolved(path))

    def method(self, cls: ast.ClassDef, name: str, depth: int) -> Optional[Callee]:
        found = self._methods.get((id(cls), name))
        if found is not None:
            return Callee(found, self.module)
        return self._in_bases(cls, name, depth)

    def _in_bases(self, cls: ast.ClassDef, name: str, depth: int) -> Optional[Callee]:
        if depth > _MAX_DEPTH:
            return None
        for base in self._bases(cls):
            if not isinstance(base, str):
                found = base[0].method(base[1], name, depth + 1)
                if found is not None:
                    return found
        return None

    def _bases(self, cls: ast.ClassDef) -> Iterator[Union[tuple["Resolver", ast.ClassDef], str]]:
        """Each direct base of `cls`: a class of the project, here or imported (also through a
        module that re-exports it), with the resolver of its module; or, for a library's class, its
        imported dotted name (`transformers.Trainer`). A project name that cannot be found is
        skipped."""
        for base in cls.bases:
            name = dotted(base)
            if name is None:
                continue
            local = self.module.collected.classes.get(name)
            if local is not None:
                if local is not cls:
                    yield self, local
                continue
            if self._local_origin(name) is None:
                head, _, rest = name.partition(".")
                imported = self.module.collected.imports.get(head, head)
                yield f"{imported}.{rest}" if rest else imported
                continue
            found = self._imported_class(name, 0)
            if found is not None:
                yield found

    def class_chain(self, name: str) -> list[tuple["AnalysedModule", ast.ClassDef]]:
        """The project class `name` names and its project bases (theirs too), each with its
        module: every class whose methods an instance of it runs."""
        local = self.module.collected.classes.get(name)
        start = (self, local) if local is not None else self._imported_class(name, 0)
        chain: list[tuple[AnalysedModule, ast.ClassDef]] = []
        todo = [start] if start is not None else []
        seen: set[int] = set()
        while todo and len(chain) < _MAX_DEPTH:
            resolver, cls = todo.pop(0)
            if id(cls) not in seen:
                seen.add(id(cls))
                chain.append((resolver.module, cls))
                todo.extend(base for base in resolver._bases(cls) if not isinstance(base, str))
        return chain

    def _imported_class(self, name: str, depth: int) -> Optional[tuple["Resolver", ast.ClassDef]]:
        found = self._local_origin(name)
        if depth > _MAX_DEPTH or found is None or self.module.index is None:
            return None
        module = analysed(self.module.index, found[0])
        if module is None:
            return None
        cls = module.collected.classes.get(found[1])
        if cls is not None:
            return module.resolver, cls
        return module.resolver._imported_class(found[1], depth + 1)  # re-exported there

    def forward_of(self, call: ast.Call, scope: Scope) -> Optional[Callee]:
        """`model(x)` on an instance of a project module class (`model = MemorizingTransformer(...)`):
        that class's `forward`."""
        name = dotted(call.func)
        cls = self.model_class(name, scope) if name is not None else None
        return self._class_method(cls, "forward", 0) if cls is not None else None

    def iterates_endlessly(self, call: ast.Call) -> bool:
        """`MetaLoader(loaders)` of a project class whose `__iter__` loops `while True:` with no
        `break` or `return`: iterating it never ends, so it has no epochs."""
        name = dotted(call.func)
        if name is None or not class_like(name):
            return False
        if name not in self.module.collected.classes and self._local_origin(name) is None:
            return False  # a library's class (a role like `DataLoader` is no bar: this reads the code)
        found = self._class_method(name, "__iter__", 0)
        return found is not None and _endless_generator(found.scope.node)

    def enters_no_grad(self, call: ast.Call) -> bool:
        """`with eval_mode(model, no_grad=True):` of a project context manager whose `__enter__`
        turns autograd off: enters a `torch.no_grad()` or `inference_mode()` its `__init__` made, or
        calls `torch.set_grad_enabled(False)`; under `if self.flag:` only where the call passes
        that flag as a literal True."""
        name = dotted(call.func)
        if name is None or (name not in self.module.collected.classes and self._local_origin(name) is None):
            return False
        enter = self._class_method(name, "__enter__", 0)
        init = self._class_method(name, "__init__", 0)
        if enter is None:
            return False
        contexts = {
            attribute for attribute, definitions in (init.scope.defs.items() if init is not None else [])
            if attribute.startswith("self.") and any(
                isinstance(d.value, ast.Call) and last_part(dotted(d.value.func)) in _GRAD_OFF_CONTEXTS for d in definitions
            )
        }
        for site in enter.scope.calls:
            func = dotted(site.call.func) or ""
            entered = func.endswith(".__enter__") and func[: -len(".__enter__")] in contexts
            switched = last_part(func) == "set_grad_enabled" and bool(site.call.args) and is_constant(site.call.args[0], False)
            if not (entered or switched):
                continue
            tests = [node.test for node, _ in site.stmt.path if isinstance(node, ast.If)]
            if all(_flag_passed_true(test, call, init) for test in tests):
                return True
        return False

    def sets_attribute(self, cls: ast.ClassDef, name: str, depth: int = 0) -> bool:
        """`self.model = ...` (the `name`, on `self` or `cls`) in a method of `cls` or of a project
        class it is built on, here or in another module: an attribute (a model, a criterion), not a
        method inherited unseen."""
        if depth > _MAX_DEPTH:
            return False
        if any(scope.class_node is cls and scope.definitions(name) for scope in self.module.collected.scopes):
            return True
        return any(not isinstance(base, str) and base[0].sets_attribute(base[1], name, depth + 1) for base in self._bases(cls))

    def class_library_bases(self, name: str) -> set[str]:
        """The library classes the project class called `name` here (defined in this module or
        imported from another of the project) is built on; empty for any other name."""
        cls = self.module.collected.classes.get(name)
        if cls is not None:
            return self.library_bases(cls)
        found = self._imported_class(name, 0)
        return found[0].library_bases(found[1]) if found is not None else set()

    def library_bases(self, cls: ast.ClassDef, depth: int = 0) -> set[str]:
        """The library classes `cls` is built on (`transformers.Trainer`), by their imported names,
        through its bases in this module and in the project's other modules."""
        if depth > _MAX_DEPTH:
            return set()
        found: set[str] = set()
        for base in self._bases(cls):
            if isinstance(base, str):
                found.add(base)
            else:
                found |= base[0].library_bases(base[1], depth + 1)
        return found

    # --- constants of other modules -------------------------------------------------------------
    def imported_constant(self, name: str) -> Optional[set[int]]:
        """The literals a name imported from a module of the project is bound to there
        (`GRAD_ACCUM = 1` in config.py, a plain config class's `grad_accum = 1`), when that module
        fixes it; None when it does not or the name comes from elsewhere."""
        from accumlint.analysis.windows import k_values

        found = self._local_origin(name)
        if found is None or self.module.index is None:
            return None
        module = analysed(self.module.index, found[0])
        if module is None or not module.collected.scopes:
            return None
        try:
            expr = ast.parse(found[1], mode="eval").body
        except SyntaxError:
            return None
        return k_values(expr, module.collected.scopes[0])

    # --- what a callee returns -----------------------------------------------------------------
    def gate_of(self, call: ast.Call, scope: Scope) -> Optional[ast.expr]:
        """What a helper such as `is_update_step(i, k)` returns, with its parameters replaced by
        the call's arguments, so it reads as a gate written at the call site. Only from this
        module, whose text the positions of the returned expression point into."""
        callee = self.resolve(call, scope)
        if callee is None or callee.module is not self.module or len(callee.scope.returns) != 1:
            return None
        return bind_arguments(call, callee, callee.scope.returns[0][0])

    # --- what a callee does -----------------------------------------------------------------
    def kinds(self, callee: Callee) -> frozenset[EventKind]:
        """The training-loop events a function performs, itself or through what it calls."""
        from accumlint.analysis.events import HELPER_KINDS

        resolver = callee.module.resolver
        if resolver is not self:
            return resolver.kinds(callee)
        key = id(callee.scope)
        if key in self._kinds:
            return self._kinds[key]
        if key in self._busy:
            return frozenset()  # recursion: what it does is being worked out further up
        self._busy.add(key)
        found = {e.kind for e in self.module.direct[key] if e.kind in HELPER_KINDS}
        for site in callee.scope.calls:
            inner = self.resolve(site.call, callee.scope)
            if inner is not None and inner.scope is not callee.scope:
                found |= inner.module.resolver.kinds(inner)
        self._busy.discard(key)
        self._kinds[key] = frozenset(found)
        return self._kinds[key]
