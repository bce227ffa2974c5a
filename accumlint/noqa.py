"""`# noqa` comments: which findings they silence, and warnings for the ones that are malformed.

Per line, as ruff reads them:
- `# noqa` alone, or followed by another `#` comment or by free text that names no code
  (`# noqa - the sum is intended`), silences every code on that line;
- `# noqa: ACC001, ACC005` silences those codes, also with an explanation after them
  (`# noqa: ACC002 - kept on purpose`);
- a code without the colon (`# noqa ACC001`) or `# noqa:` with no code is an invalid directive:
  it silences nothing and draws a warning, so a typo never turns into a blanket suppression.
For a whole file, a comment line of its own: `# accumlint: noqa` (every code) or
`# accumlint: noqa: ACC001, ACC005` (those codes).

A code of another tool (`E501`, `F401`) is accepted silently, since files are often linted by
several tools; an `ACC` code that does not exist draws a warning.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Optional

from accumlint.registry import RULES

# The directive: `noqa` after `#` (any spaces), then whatever follows up to the next `#`.
_DIRECTIVE = re.compile(r"#\s*noqa(?![\w-])(?P<rest>[^#]*)", re.IGNORECASE)
_FILE_DIRECTIVE = re.compile(r"^\s*#\s*accumlint\s*:\s*noqa(?![\w-])(?P<rest>[^#]*)", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+")
_CODE_LIKE = re.compile(r"[A-Za-z]+[0-9]+\b")  # what a code with a typo or a missing colon starts with
_SEPARATOR = re.compile(r"[\s,]+")
OUR_PREFIX = "ACC"


@dataclass(frozen=True)
class Directive:
    """One parsed `noqa`: `codes` None means every code; `problem` set means it is invalid."""

    codes: Optional[frozenset[str]] = None
    problem: Optional[str] = None
    unknown: tuple[str, ...] = ()  # ACC codes that no rule has

    @property
    def valid(self) -> bool:
        return self.problem is None

    def covers(self, code: str) -> bool:
        if not self.valid:
            return False
        return self.codes is None or code.upper() in self.codes


def _parse_rest(rest: str) -> Directive:
    """What follows `noqa`: nothing (blanket), or `: CODE, CODE`."""
    stripped = rest.strip()
    if not stripped:
        return Directive()
    if not stripped.startswith(":"):
        if not _CODE_LIKE.match(stripped):
            return Directive()  # an explanation after a bare noqa
        return Directive(problem="expected `:` followed by a comma-separated list of codes "
                                 "(e.g., `# noqa: ACC001, ACC005`)")
    items: list[str] = []
    for item in (item for item in _SEPARATOR.split(stripped[1:].strip()) if item):
        if _CODE.fullmatch(item):
            items.append(item)
        elif _CODE_LIKE.match(item) or not items:  # a misspelt code, or no code at all
            return Directive(problem=f"expected codes of uppercase letters followed by digits "
                                     f"(e.g., `ACC001`), found `{item}`")
        else:
            break  # `# noqa: B006 - why`: the rest explains the codes
    if not items:
        return Directive(problem="expected a comma-separated list of codes after `noqa:`")
    unknown = tuple(item for item in items if item.startswith(OUR_PREFIX) and item not in RULES)
    return Directive(codes=frozenset(items), unknown=unknown)


def line_directive(line: str) -> Optional[Directive]:
    """The `# noqa` on one source line, or None. A line-level directive is any `# noqa` in a
    comment; text inside a string that looks like one is rare enough to accept, as flake8 does."""
    if _FILE_DIRECTIVE.match(line):
        return None  # a file-level directive, not a line one
    match = _DIRECTIVE.search(line)
    return _parse_rest(match.group("rest")) if match else None


def suppressed(line: str, code: str) -> bool:
    """Whether the `# noqa` on `line` (if any, and valid) silences `code` there."""
    directive = line_directive(line)
    return directive is not None and directive.covers(code)


def comments(text: str) -> list[tuple[int, bool, str]]:
    """(1-based row, whether the comment is alone on its line, comment text) of every comment,
    found by Python's tokenizer so that `'# noqa'` inside a string is not one. Text the tokenizer
    cannot read (IPython syntax, a syntax error) is read line by line instead."""
    if "noqa" not in text.lower():
        return []
    found: list[tuple[int, bool, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and "noqa" in token.string.lower():
                alone = not token.line[: token.start[1]].strip()
                found.append((token.start[0], alone, token.string))
        return found
    except (tokenize.TokenError, SyntaxError):
        pass
    for row, line in enumerate(text.splitlines(), start=1):
        match = re.search(r"#.*noqa.*$", line, re.IGNORECASE)
        if match:
            found.append((row, not line[: match.start()].strip(), match.group()))
    return found


def _file_level(alone: bool, comment: str) -> Optional[re.Match[str]]:
    return _FILE_DIRECTIVE.match(comment) if alone else None


def file_directive(text: str) -> Optional[Directive]:
    """The union of the file's valid `# accumlint: noqa` lines (each a comment of its own)."""
    codes: set[str] = set()
    found = False
    for _row, alone, comment in comments(text):
        match = _file_level(alone, comment)
        if not match:
            continue
        directive = _parse_rest(match.group("rest"))
        if not directive.valid:
            continue
        if directive.codes is None:
            return Directive()
        found = True
        codes |= directive.codes
    return Directive(codes=frozenset(codes)) if found else None


def problems(text: str) -> list[tuple[int, str]]:
    """(1-based row, message) for every malformed or unknown-code `noqa` comment in the text."""
    found: list[tuple[int, str]] = []
    for row, alone, comment in comments(text):
        match = _file_level(alone, comment)
        if match:
            directive: Optional[Directive] = _parse_rest(match.group("rest"))
        elif _FILE_DIRECTIVE.match(comment):
            continue  # `x = 1  # accumlint: noqa` is no directive at all
        else:
            directive = line_directive(comment)
        if directive is None:
            continue
        kind = "`# accumlint: noqa`" if match else "`# noqa`"
        if directive.problem:
            found.append((row, f"invalid {kind} directive (it silences nothing): {directive.problem}"))
        for code in directive.unknown:
            found.append((row, f"unknown rule code `{code}` in {kind} (see `accumlint rule --all`)"))
    return found
