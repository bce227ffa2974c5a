"""The rule implementations, keyed by code. Each reads the shared ModuleFacts."""

from __future__ import annotations

from typing import Callable, Iterable

from accumlint.analysis import ModuleFacts
from accumlint.model import Violation

RuleCheck = Callable[[ModuleFacts], Iterable[Violation]]

RULE_CHECKS: dict[str, RuleCheck] = {}
