"""The rule implementations, keyed by code. Each reads the shared ModuleFacts."""

from __future__ import annotations

from typing import Callable, Iterable

from accumlint.analysis import ModuleFacts
from accumlint.model import Violation
from accumlint.rules import acc001, acc002, acc003, acc004, acc005

RuleCheck = Callable[[ModuleFacts], Iterable[Violation]]

RULE_CHECKS: dict[str, RuleCheck] = {
    acc001.CODE: acc001.check,
    acc002.CODE: acc002.check,
    acc003.CODE: acc003.check,
    acc004.CODE: acc004.check,
    acc005.CODE: acc005.check,
}
