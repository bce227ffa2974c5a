"""Line and column of reported nodes, cheaply.

LibCST's PositionProvider re-renders the whole tree it is given; rendering costs about as much
as parsing. CPython's `ast` already knows the exact span of every statement, so LibCST's
statements are paired with ast's in source order: a statement's span comes straight from ast,
and a node inside a small statement is located by rendering that one statement. Anything that
does not line up falls back to the PositionProvider over the whole module."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from accumlint.analysis.exprs import walk

Span = tuple[int, int, int, int]  # start line, start column, end line, end column (0-based columns)


def _cst_suite(suite) -> list[cst.CSTNode]:
    """A LibCST suite as ast sees it: one entry per small statement or compound statement."""
    if suite is None:
        return []
    if isinstance(suite, cst.SimpleStatementSuite):
        return list(suite.body)
    units: list[cst.CSTNode] = []
    for statement in suite.body:
        if isinstance(statement, cst.SimpleStatementLine):
            units.extend(statement.body)
        else:
            units.append(statement)
    return units


def _cst_children(node: cst.CSTNode) -> list[list[cst.CSTNode]]:
    if isinstance(node, (cst.For, cst.While)):
        return [_cst_suite(node.body), _cst_suite(node.orelse.body) if node.orelse else []]
    if isinstance(node, cst.If):
        if isinstance(node.orelse, cst.If):
            return [_cst_suite(node.body), [node.orelse]]
        return [_cst_suite(node.body), _cst_suite(node.orelse.body) if node.orelse else []]
    if isinstance(node, (cst.With, cst.FunctionDef, cst.ClassDef)):
        return [_cst_suite(node.body)]
    if isinstance(node, (cst.Try, cst.TryStar)):
        return (
            [_cst_suite(node.body)]
            + [_cst_suite(h.body) for h in node.handlers]
            + [_cst_suite(node.orelse.body) if node.orelse else []]
            + [_cst_suite(node.finalbody.body) if node.finalbody else []]
        )
    if isinstance(node, cst.Match):
        return [_cst_suite(case.body) for case in node.cases]
    return []


def _ast_children(node: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.If)):
        return [node.body, node.orelse]
    if isinstance(node, (ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.body]
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return [node.body] + [h.body for h in node.handlers] + [node.orelse, node.finalbody]
    if isinstance(node, ast.Match):
        return [case.body for case in node.cases]
    return []


def _pairs(cst_units: list[cst.CSTNode], ast_units: list[ast.stmt]) -> Iterator[tuple[cst.CSTNode, ast.stmt]]:
    if len(cst_units) != len(ast_units):
        raise LookupError("statements do not line up")
    for mine, theirs in zip(cst_units, ast_units):
        yield mine, theirs
        cst_parts, ast_parts = _cst_children(mine), _ast_children(theirs)
        if len(cst_parts) != len(ast_parts):
            raise LookupError("statements do not line up")
        for cst_body, ast_body in zip(cst_parts, ast_parts):
            yield from _pairs(cst_body, ast_body)


def _statement_start(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(decorators, key=lambda d: (d.lineno, d.col_offset))
        return first.lineno, first.col_offset - 1  # the `@` before the expression
    return node.lineno, node.col_offset


class Positions:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._statements: Optional[dict[int, tuple[cst.CSTNode, ast.stmt]]] = None
        self._full: Optional[dict] = None

    def _paired(self) -> dict[int, tuple[cst.CSTNode, ast.stmt]]:
        if self._statements is None:
            tree = ast.parse(self.module.code)
            units = _cst_suite(cst.IndentedBlock(body=self.module.body)) if self.module.body else []
            self._statements = {id(c): (c, a) for c, a in _pairs(units, tree.body)}
        return self._statements

    def span(self, node: cst.CSTNode) -> Span:
        try:
            return self._cheap_span(node)
        except (LookupError, SyntaxError, RecursionError, KeyError):
            return self._full_span(node)

    def _cheap_span(self, node: cst.CSTNode) -> Span:
        paired = self._paired()
        known = paired.get(id(node))
        if known is not None and known[0] is node:
            statement = known[1]
            line, column = _statement_start(statement)
            return line, column, statement.end_lineno, statement.end_col_offset
        for mine, theirs in paired.values():
            if _cst_children(mine) or not any(current is node for current in walk(mine, skip_scopes=False)):
                continue
            # Render the one small statement holding the node and shift it to where ast says it is.
            piece = cst.Module(body=[cst.SimpleStatementLine(body=[mine])], header=[], footer=[])
            spans = MetadataWrapper(piece, unsafe_skip_copy=True).resolve(PositionProvider)
            origin, inner = spans[mine], spans[node]
            line_shift = theirs.lineno - origin.start.line
            first_line_shift = theirs.col_offset - origin.start.column

            def column(line: int, col: int) -> int:
                return col + first_line_shift if line == origin.start.line else col

            return (
                inner.start.line + line_shift,
                column(inner.start.line, inner.start.column),
                inner.end.line + line_shift,
                column(inner.end.line, inner.end.column),
            )
        raise LookupError("node is not inside a small statement")

    def _full_span(self, node: cst.CSTNode) -> Span:
        if self._full is None:
            self._full = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        found = self._full[node]
        return found.start.line, found.start.column, found.end.line, found.end.column
