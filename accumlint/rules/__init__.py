"""The rule implementations, keyed by code. Each reads the shared ModuleFacts."""

from __future__ import annotations

from typing import Callable, Iterable

from accumlint.analysis import ModuleFacts
from accumlint.model import Violation
from accumlint.rules import acc001, acc002, acc003, acc004, acc005, acc006, acc007, acc008, acc009, acc010

RuleCheck = Callable[[ModuleFacts], Iterable[Violation]]

RULE_CHECKS: dict[str, RuleCheck] = {
    rule.CODE: rule.check
    for rule in (acc001, acc002, acc003, acc004, acc005, acc006, acc007, acc008, acc009, acc010)
}
