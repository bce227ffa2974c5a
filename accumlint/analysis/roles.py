"""What each name in the file is (optimizer, scheduler, scaler, accelerator, DDP model, ...)
and which frameworks are in play, from constructors, `prepare` calls, imports and names."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import ast

from accumlint.analysis.collect import Collected, Definition, Scope
from accumlint.analysis.exprs import dotted, int_value, keyword, last_part, positional
from accumlint import frameworks
from accumlint.frameworks import Framework, Role, accelerate, constructed_role, deepspeed

OPTIMIZER, SCHEDULER, SCALER, ACCELERATOR, FABRIC, ENGINE, DDP, LOADER = (
    Role.OPTIMIZER, Role.SCHEDULER, Role.SCALER, Role.ACCELERATOR, Role.FABRIC, Role.ENGINE, Role.DDP, Role.LOADER,
)


def _role_from_name(name: str) -> Optional[Role]:
    """Fallback for objects whose construction is not in the file: their conventional names."""
    last = name.rsplit(".", 1)[-1].lower()
    if "sched" in last:
        return SCHEDULER
    words = last.split("_")
    if "scaler" in words[-1] or len(words) > 1 and len(words[-1]) == 1 and "scaler" in words[-2]:
        return SCALER  # `grad_scaler`, `scaler_g`; not `scaler_meter`, a meter of the scale
    if last in {"opt", "optim", "optimizer", "optimiser"} or re.search(r"(^|_)opt(im(izer|iser)?)?($|_)", last):
        return OPTIMIZER
    if "optimizer" in last or "optimiser" in last:
        return OPTIMIZER
    if "accelerator" in last:
        return ACCELERATOR
    if last == "fabric":
        return FABRIC
    if last.endswith("engine") or "." in name and last == deepspeed.ENGINE_ATTRIBUTE:
        return ENGINE
    if "loader" in last:
        return LOADER
    return None


@dataclass
class Roles:
    by_name: dict[str, Role] = field(default_factory=dict)
    prepared: set[str] = field(default_factory=set)  # passed through accelerator.prepare
    accelerator_gas: dict[str, Optional[ast.expr]] = field(default_factory=dict)
    # Accelerator names built both with and without accumulation steps (two functions of one file):
    # which one a loop uses is not told by the name, so the accumulating one is kept and rules that
    # would report on either reading stay silent.
    ambiguous_gas: set[str] = field(default_factory=set)
    ddp_models: set[str] = field(default_factory=set)
    imports: dict[str, str] = field(default_factory=dict)
    uses_deepspeed: bool = False
    # Optimizers built to accumulate and average by themselves (Keras 3 `gradient_accumulation_steps=k`).
    accumulating_optimizers: dict[str, ast.expr] = field(default_factory=dict)
    # Fabric objects whose strategy runs a DeepSpeed engine configured to accumulate over k (its
    # backward divides by k): name -> k as the config writes it.
    deepspeed_fabric_gas: dict[str, ast.expr] = field(default_factory=dict)
    # ... of those, the ones that run it whatever the launch (not one branch of a choice)
    deepspeed_fabric_always: set[str] = field(default_factory=set)
    # Optimizers whose backward overwrites the gradients (ColossalAI Gemini's): name -> framework.
    overwriting_optimizers: dict[str, Framework] = field(default_factory=dict)

    def role(self, name: Optional[str]) -> Optional[Role]:
        if name is None:
            return None
        return self.by_name.get(name) or _role_from_name(name)

    def canonical(self, name: Optional[str]) -> str:
        """Resolve the first component through the file's imports: `DDP` -> `...DistributedDataParallel`."""
        if not name:
            return ""
        head, _, rest = name.partition(".")
        origin = self.imports.get(head, head)
        return f"{origin}.{rest}" if rest else origin

    def accumulating_accelerator(self, name: Optional[str]) -> bool:
        """An Accelerator built with gradient_accumulation_steps other than 1 (or a plugin)."""
        if name is None or name not in self.accelerator_gas:
            return False
        gas = self.accelerator_gas[name]
        return gas is not None and int_value(gas) != 1


def _constructed_role(value: ast.expr, roles: Roles) -> Optional[Role]:
    if not isinstance(value, ast.Call):
        return None
    full = roles.canonical(dotted(value.func))
    last = full.rsplit(".", 1)[-1]
    known = constructed_role(last)
    if known is not None:
        return known
    # The class name first: a project's `utils.optim.AnnealingLR` is a scheduler kept in an
    # `optim` package, not an optimizer.
    if "lr_scheduler" in full or "schedule" in last.lower() or (last.endswith("LR") and last[:1].isupper()):
        return SCHEDULER
    if ".optim." in f".{full}." and last[:1].isupper():
        return OPTIMIZER
    if full.endswith("parallel.DistributedDataParallel"):
        return DDP
    return None


def _prepare_targets(definition: Definition, roles: Roles) -> None:
    """`model, opt, dl, sched = accelerator.prepare(model, opt, dl, sched)`: roles pass through."""
    call = definition.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return
    if call.func.attr not in {"prepare", "setup", "setup_optimizers"}:
        return
    owner = roles.role(dotted(call.func.value))
    if owner not in {ACCELERATOR, FABRIC}:
        return
    index = definition.index[0] if definition.index else 0
    argument = positional(call, index)
    source = dotted(argument) if argument is not None else None
    role = roles.role(source) if source else None
    if role is not None:
        roles.by_name.setdefault(definition.name, role)
    roles.prepared.add(definition.name)


def _single_value(expr: Optional[ast.expr], scope: Optional[Scope]) -> Optional[ast.expr]:
    """A name's one assigned value, looked up from `scope` outwards (the expression itself when
    it is no name)."""
    if not isinstance(expr, ast.Name):
        return expr
    current = scope
    while current is not None:
        found = [d for d in current.definitions(expr.id) if d.kind == "assign"]
        if found:
            return found[0].value if len(found) == 1 else None
        current = current.parent
    return None


def _strategy_accumulation(strategy: Optional[ast.expr], scope: Optional[Scope]) -> Optional[tuple[ast.expr, bool]]:
    """k of `DeepSpeedStrategy(config={..., "gradient_accumulation_steps": k})`, and whether that
    strategy always runs: also as one branch of `... if devices > 1 else "auto"` (then not
    always) and through names bound to the strategy or the config; None when k is 1, absent or
    not in sight (a config file)."""
    strategy = _single_value(strategy, scope)
    if isinstance(strategy, ast.IfExp):
        found = _strategy_accumulation(strategy.body, scope) or _strategy_accumulation(strategy.orelse, scope)
        return (found[0], False) if found is not None else None
    if not isinstance(strategy, ast.Call) or last_part(dotted(strategy.func)) not in deepspeed.STRATEGIES:
        return None
    config = _single_value(keyword(strategy, "config"), scope)
    if not isinstance(config, ast.Dict):
        return None
    for key, value in zip(config.keys, config.values):
        if isinstance(key, ast.Constant) and key.value == deepspeed.CONFIG_ACCUMULATION_KEY:
            return (value, True) if int_value(value) != 1 else None
    return None


def infer_roles(collected: Collected) -> Roles:
    roles = Roles(imports=dict(collected.imports))
    roles.uses_deepspeed = any(origin.split(".")[0] == "deepspeed" for origin in collected.imports.values())
    definitions = [d for scope in collected.scopes for ds in scope.defs.values() for d in ds]
    for definition in definitions:
        if definition.kind not in {"assign", "unpack", "with"} or definition.value is None:
            continue
        value = definition.value
        if definition.kind == "unpack" and isinstance(value, ast.Call):
            full = roles.canonical(dotted(value.func))
            # deepspeed.initialize returns (engine, optimizer, loader, scheduler).
            if full.endswith("deepspeed.initialize") or full == "initialize" and roles.uses_deepspeed:
                position = definition.index[0] if definition.index else 0
                role = deepspeed.INITIALIZE_RESULTS.get(position)
                if role:
                    roles.by_name[definition.name] = role
                continue
            continue
        if definition.kind == "unpack":
            element = definition.bound_value()
            if element is None:
                continue
            value = element
        role = _constructed_role(value, roles)
        if role is None:
            continue
        roles.by_name[definition.name] = role
        if role == ACCELERATOR and isinstance(value, ast.Call):
            gas = keyword(value, accelerate.ACCUMULATION_STEPS_KEYWORD)
            if gas is None:
                gas = keyword(value, accelerate.ACCUMULATION_PLUGIN_KEYWORD)
            if definition.name in roles.accelerator_gas:
                before = roles.accelerator_gas[definition.name]
                if (before is None) != (gas is None) or (before is not None and gas is not None and ast.dump(before) != ast.dump(gas)):
                    roles.ambiguous_gas.add(definition.name)
                if gas is None:
                    gas = before
            roles.accelerator_gas[definition.name] = gas
        if role == DDP:
            roles.ddp_models.add(definition.name)
        if role == OPTIMIZER and isinstance(value, ast.Call):
            overwriting = frameworks.overwriting_framework(roles.canonical(dotted(value.func)))
            if overwriting is not None:
                roles.overwriting_optimizers[definition.name] = overwriting
        if role == FABRIC and isinstance(value, ast.Call):
            found = _strategy_accumulation(keyword(value, "strategy"), definition.stmt.scope)
            if found is not None:
                roles.deepspeed_fabric_gas[definition.name] = found[0]
                if found[1]:
                    roles.deepspeed_fabric_always.add(definition.name)
        if role == OPTIMIZER and isinstance(value, ast.Call):
            for name in frameworks.ACCUMULATION_KEYWORDS:
                steps = keyword(value, name)
                if steps is not None and int_value(steps) not in {0, 1}:
                    roles.accumulating_optimizers[definition.name] = steps
    for definition in definitions:
        if definition.kind in {"assign", "unpack"}:
            _prepare_targets(definition, roles)
    return roles
