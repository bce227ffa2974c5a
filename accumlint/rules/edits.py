"""Building fixes as text edits on the spans CPython's parser gives: expressions rewritten with
the parentheses precedence asks for, statements inserted, moved or removed whole.

Every rule that edits goes through here, and its message quotes the same rendering."""

from __future__ import annotations

import ast
from typing import Optional, Sequence

from accumlint.model import TextEdit
from accumlint.source import SourceText

# Binding strength, weakest first (the Python reference's precedence table).
NAMED, LAMBDA, IFEXP, OR, AND, NOT, COMPARE = -1, 0, 1, 2, 3, 4, 5
BITOR, BITXOR, BITAND, SHIFT, ADD, MUL, UNARY, POWER, AWAIT, ATOM = 6, 7, 8, 9, 10, 11, 12, 13, 14, 100
_BINARY = {
    ast.BitOr: BITOR, ast.BitXor: BITXOR, ast.BitAnd: BITAND, ast.LShift: SHIFT, ast.RShift: SHIFT,
    ast.Add: ADD, ast.Sub: ADD, ast.Mult: MUL, ast.Div: MUL, ast.FloorDiv: MUL, ast.Mod: MUL,
    ast.MatMult: MUL, ast.Pow: POWER,
}


def precedence(src: SourceText, node: ast.AST) -> int:
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)]
    if isinstance(node, ast.BoolOp):
        return OR if isinstance(node.op, ast.Or) else AND
    if isinstance(node, ast.UnaryOp):
        return NOT if isinstance(node.op, ast.Not) else UNARY
    if isinstance(node, ast.Compare):
        return COMPARE
    if isinstance(node, ast.IfExp):
        return IFEXP
    if isinstance(node, ast.Lambda):
        return LAMBDA
    if isinstance(node, ast.Await):
        return AWAIT
    if isinstance(node, ast.Tuple):  # `(a, b)` is an atom; a bare `a, b` binds weakest of all
        return ATOM if src.segment(node).startswith("(") else NAMED
    if isinstance(node, (ast.NamedExpr, ast.Starred, ast.Yield, ast.YieldFrom)):
        return NAMED
    return ATOM


def _paren(text: str) -> str:
    return f"({text})"


def operand(src: SourceText, node: ast.AST, minimum: int) -> str:
    """The node's text, parenthesised when it binds less tightly than `minimum`."""
    text = src.segment(node)
    return _paren(text) if precedence(src, node) < minimum else text


def receiver(src: SourceText, node: ast.AST) -> str:
    """The node's text as the receiver of `.method()`: `2 .x` and `a + b.x` need parentheses."""
    text = src.segment(node)
    number = isinstance(node, ast.Constant) and type(node.value) in (int, float, complex)
    return _paren(text) if number or precedence(src, node) < ATOM else text


def grouped(src: SourceText, node: ast.AST) -> Optional[tuple[int, int]]:
    """The span of the parentheses around a receiver (`(loss / k).backward()`), if it has them."""
    start, end = src.span(node)
    before = src.text[:start].rstrip()
    after = src.text[end:].lstrip()
    if before.endswith("(") and after.startswith(")"):
        return len(before) - 1, len(src.text) - len(after) + 1
    return None


def replace(src: SourceText, node: ast.AST, text: str) -> TextEdit:
    start, end = src.span(node)
    return TextEdit(start, end, text)


def replace_receiver(src: SourceText, node: ast.AST, text: str, text_precedence: int) -> TextEdit:
    """Put `text` where the receiver `node` stands, parenthesised unless it is an atom."""
    parens = grouped(src, node)
    start, end = parens if parens is not None else src.span(node)
    return TextEdit(start, end, text if text_precedence >= ATOM else _paren(text))


def divided(src: SourceText, numerator: ast.AST, denominator: ast.AST) -> str:
    """`numerator / denominator` with the parentheses precedence asks for."""
    return f"{operand(src, numerator, MUL)} / {operand(src, denominator, MUL + 1)}"


def detached(src: SourceText, value: ast.AST) -> str:
    """`value.detach()` on the whole value."""
    return f"{receiver(src, value)}.detach()"


# --- statements ------------------------------------------------------------------------------
_COMPOUND = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
    ast.AsyncFunctionDef, ast.ClassDef, ast.Match, getattr(ast, "TryStar", ast.Try),
)


def lone(src: SourceText, node: ast.AST, compound: bool = False) -> bool:
    """A simple statement that has its lines to itself: nothing before it on its first line,
    nothing but a comment after it on its last (no `a; b`, no `if x: a`). With `compound`, a
    compound statement (a guarding `if`) that has its lines to itself passes too."""
    if isinstance(node, _COMPOUND) and not compound:
        return False
    start, end = src.span(node)
    head = src.text[src.line_start(node.lineno):start]  # type: ignore[attr-defined]
    tail = src.text[end:src.line_end(node.end_lineno)].strip()  # type: ignore[attr-defined]
    return not head.strip() and (not tail or tail.startswith("#"))


def insert_after(src: SourceText, anchor: ast.AST, lines: Sequence[str]) -> Optional[TextEdit]:
    """New statements on the lines right after `anchor`, at its indentation."""
    if not lone(src, anchor):
        return None
    indent = src.indent_of(anchor.lineno)  # type: ignore[attr-defined]
    newline = src.newline()
    at = src.line_end(anchor.end_lineno)  # type: ignore[attr-defined]
    return TextEdit(at, at, "".join(newline + indent + line for line in lines))


def insert_before(src: SourceText, anchor: ast.AST, lines: Sequence[str]) -> Optional[TextEdit]:
    if not lone(src, anchor):
        return None
    indent = src.indent_of(anchor.lineno)  # type: ignore[attr-defined]
    newline = src.newline()
    at = src.line_start(anchor.lineno)  # type: ignore[attr-defined]
    return TextEdit(at, at, "".join(indent + line + newline for line in lines))


def _comment_lines_above(src: SourceText, node: ast.AST) -> int:
    """The first line of the comments that sit right above a statement, at its indentation."""
    first = node.lineno  # type: ignore[attr-defined]
    indent = src.indent_of(first)
    while first > 1:
        above = src.line(first - 1)
        if not above.strip().startswith("#") or src.indent_of(first - 1) != indent:
            break
        first -= 1
    return first


def remove(src: SourceText, node: ast.AST, block: Optional[list], compound: bool = False) -> Optional[TextEdit]:
    """Delete a statement's lines; `pass` stays behind when it was the only statement of its block."""
    if not lone(src, node, compound) or block is None:
        return None
    start = src.line_start(node.lineno)  # type: ignore[attr-defined]
    end = src.after_line(node.end_lineno)  # type: ignore[attr-defined]
    if len(block) == 1:
        indent = src.indent_of(node.lineno)  # type: ignore[attr-defined]
        return TextEdit(start, end, indent + "pass" + src.newline())
    return TextEdit(start, end, "")


def _spans_string_lines(node: ast.AST) -> bool:
    return any(
        isinstance(n, (ast.Constant, ast.JoinedStr)) and n.lineno != n.end_lineno  # type: ignore[attr-defined]
        for n in ast.walk(node)
    )


def move_after(
    src: SourceText, node: ast.AST, block: Optional[list], anchor: ast.AST, compound: bool = False
) -> Optional[tuple[TextEdit, ...]]:
    """Move a statement (with the comments right above it) to just after `anchor`, re-indented;
    with `compound`, a whole compound statement (an `if` with its body) moves the same way."""
    if not (lone(src, node, compound) and lone(src, anchor)) or block is None or _spans_string_lines(node):
        return None
    first = _comment_lines_above(src, node)
    old_indent = src.indent_of(node.lineno)  # type: ignore[attr-defined]
    new_indent = src.indent_of(anchor.lineno)  # type: ignore[attr-defined]
    lines = []
    for lineno in range(first, node.end_lineno + 1):  # type: ignore[attr-defined]
        line = src.line(lineno)
        if line.strip() and not line.startswith(old_indent):
            return None
        lines.append(line[len(old_indent):] if line.strip() else "")
    start, end = src.line_start(first), src.after_line(node.end_lineno)  # type: ignore[attr-defined]
    removal = TextEdit(start, end, old_indent + "pass" + src.newline() if len(block) == 1 else "")
    newline = src.newline()
    at = src.line_end(anchor.end_lineno)  # type: ignore[attr-defined]
    insertion = TextEdit(at, at, "".join(newline + (new_indent + line if line else "") for line in lines))
    if start <= at < end:
        return None
    return removal, insertion


def remove_keyword(src: SourceText, call: ast.Call, name: str) -> Optional[TextEdit]:
    """Drop `name=...` from a call, with the comma that separated it."""
    arguments: list[ast.AST] = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))  # type: ignore[attr-defined]
    index = next((i for i, a in enumerate(arguments) if isinstance(a, ast.keyword) and a.arg == name), None)
    if index is None:
        return None
    start, end = src.span(arguments[index])
    if index > 0:  # from the end of the previous argument: `f(a, b=1)` -> `f(a)`
        start = src.span(arguments[index - 1])[1]
    elif index + 1 < len(arguments):  # the first of several: up to the next one
        end = src.span(arguments[index + 1])[0]
    else:  # the only argument: a trailing comma goes too
        rest = src.text[end:]
        stripped = rest.lstrip()
        if stripped.startswith(","):
            end += len(rest) - len(stripped) + 1
    return TextEdit(start, end, "")
