"""Building blocks for fixes: statements inserted, moved or removed around an original one."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from accumlint.analysis.collect import Stmt


def code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


def lone_statement(stmt: Stmt) -> Optional[cst.SimpleStatementLine]:
    """The line of `stmt` when it holds nothing else (so it can be moved or removed whole)."""
    line = stmt.line
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


def statement_line(stmt: Stmt) -> Optional[cst.SimpleStatementLine]:
    """The indented line of `stmt`, a place new statements can go before or after."""
    return stmt.line if isinstance(stmt.line, cst.SimpleStatementLine) else None


def new_line(source: str) -> cst.SimpleStatementLine:
    parsed = cst.parse_statement(source + "\n")
    assert isinstance(parsed, cst.SimpleStatementLine)
    return parsed


def moved(line: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """A statement to re-insert elsewhere: its own comments stay with it, blank lines do not."""
    kept = [l for l in line.leading_lines if l.comment is not None]
    return line.with_changes(leading_lines=kept)


def after(line: cst.SimpleStatementLine, *new: cst.BaseStatement) -> cst.FlattenSentinel:
    return cst.FlattenSentinel([line, *new])


def before(line: cst.SimpleStatementLine, *new: cst.BaseStatement) -> cst.FlattenSentinel:
    return cst.FlattenSentinel([*new, line])
