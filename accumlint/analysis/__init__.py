"""One shared analysis of a module's training loops; every rule reads its facts."""

from accumlint.analysis.facts import ModuleFacts, analyse

__all__ = ["ModuleFacts", "analyse"]
