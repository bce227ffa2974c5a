"""Placeholder: replaced by the real analysis in the next commits."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst


@dataclass
class ModuleFacts:
    module: cst.Module


def analyse(module: cst.Module) -> ModuleFacts:
    return ModuleFacts(module=module)
