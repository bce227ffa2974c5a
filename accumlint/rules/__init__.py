"""The rule implementations, keyed by code. Each reads the shared ModuleFacts."""

from __future__ import annotations

from typing import Callable, Iterable

from accumlint.analysis import ModuleFacts
from accumlint.model import Violation
from accumlint.rules import acc001

RuleCheck = Callable[[ModuleFacts], Iterable[Violation]]

RULE_CHECKS: dict[str, RuleCheck] = {
    acc001.CODE: acc001.check,
}
