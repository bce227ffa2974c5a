"""The rule implementations. Each module declares its CODE, NAME, SUMMARY and FIX safety next to
its `check` over the shared ModuleFacts; the registry and the check table are derived from them."""

from __future__ import annotations

from types import ModuleType
from typing import Callable, Iterable

from accumlint.analysis import ModuleFacts
from accumlint.model import Violation
from accumlint.rules import acc001, acc002, acc003, acc004, acc005, acc006, acc007, acc008, acc009, acc010, acc011, acc012, acc014, acc015

RuleCheck = Callable[[ModuleFacts], Iterable[Violation]]

RULE_MODULES: tuple[ModuleType, ...] = (acc001, acc002, acc003, acc004, acc005, acc006, acc007, acc008, acc009, acc010, acc011, acc012, acc014, acc015)

RULE_CHECKS: dict[str, RuleCheck] = {rule.CODE: rule.check for rule in RULE_MODULES}
