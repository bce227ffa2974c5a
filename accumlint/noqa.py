"""`# noqa` comments: which findings they silence, and warnings for the ones that are malformed.

Files are often linted by several tools, and a line's `# noqa` is shared by all of them. Per
line:
- `# noqa` alone, or followed by another `#` comment or by free text that names no code
  (`# noqa - the sum is intended`), silences every code on that line;
- `# noqa: ACC001, ACC005` silences those codes, also with an explanation after them
  (`# noqa: ACC002 - kept on purpose`) and beside other tools' codes (`# noqa: E501, ACC001`);
- a directive that names no `ACC` code is another tool's (`# noqa: E501`, `# noqa E203`,
  `# noqa: max-complexity`): it silences none of our findings and draws no warning;
- what is ours and malformed draws a warning and silences nothing, so a typo never turns into a
  blanket suppression: an `ACC` code without the colon (`# noqa ACC001`), in lowercase
  (`# noqa: acc001`), or one that no rule has (`# noqa: ACC999`).
For a whole file, a comment line of its own: `# accumlint: noqa` (every code) or
`# accumlint: noqa: ACC001, ACC005` (those codes); that directive is ours alone, so any
malformed one draws a warning.
"""

from __future__ import annotations

import io
import itertools
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
_OURS = re.compile(r"acc[0-9]*", re.IGNORECASE)  # a token that means one of our codes, spelt well or not
_OTHER_CODE = re.compile(r"[A-Za-z]+[0-9]+|[a-z][a-z0-9]*(?:-[a-z0-9]+)+")  # E501, e501, max-complexity
_SEPARATOR = re.compile(r"[\s,]+")
OUR_PREFIX = "ACC"
_NO_COLON = ("expected `:` followed by a comma-separated list of codes "
             "(e.g., `# noqa: ACC001, ACC005`)")


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


def _misspelt(item: str) -> Directive:
    return Directive(problem=f"expected codes of uppercase letters followed by digits (e.g., `ACC001`), "
                             f"found `{item}`")


def _with_codes(items: list[str]) -> Directive:
    unknown = tuple(item for item in items if _OURS.fullmatch(item) and item not in RULES)
    return Directive(codes=frozenset(items), unknown=unknown)


def _parse_file_rest(rest: str) -> Directive:
    """What follows `# accumlint: noqa`: nothing (every code), or `: CODE, CODE`."""
    stripped = rest.strip()
    if not stripped:
        return Directive()
    if not stripped.startswith(":"):
        if not _CODE_LIKE.match(stripped):
            return Directive()  # an explanation
        return Directive(problem=_NO_COLON)
    items: list[str] = []
    for item in (item for item in _SEPARATOR.split(stripped[1:].strip()) if item):
        if _CODE.fullmatch(item):
            items.append(item)
        elif _CODE_LIKE.match(item) or not items:  # a misspelt code, or no code at all
            return _misspelt(item)
        else:
            break  # `# accumlint: noqa: ACC001 - why`: the rest explains the codes
    if not items:
        return Directive(problem="expected a comma-separated list of codes after `noqa:`")
    return _with_codes(items)


def _parse_line_rest(rest: str) -> Directive:
    """What follows a line's `# noqa`: nothing (every code), an explanation (every code),
    codes without the colon (another tool's, or our malformed one), or `: CODE, CODE`, where
    codes of other tools (`E501`, `max-complexity`) may stand beside ours."""
    stripped = rest.strip()
    if not stripped:
        return Directive()
    if not stripped.startswith(":"):
        words = [word for word in _SEPARATOR.split(stripped) if word]
        leading = list(itertools.takewhile(lambda word: bool(_CODE_LIKE.fullmatch(word) or _OURS.fullmatch(word)),
                                           words))
        if not leading:
            return Directive()  # an explanation after a bare noqa
        if any(_OURS.fullmatch(word) for word in leading):
            return Directive(problem=_NO_COLON)
        return Directive(codes=frozenset(leading))  # `# noqa E203`: another tool's, none of ours
    items: list[str] = []
    for item in (item for item in _SEPARATOR.split(stripped[1:].strip()) if item):
        if _OURS.fullmatch(item):
            if not item.startswith(OUR_PREFIX):
                return _misspelt(item)  # `acc001`: ours, never silently ignored
            items.append(item)
        elif _OTHER_CODE.fullmatch(item):
            items.append(item)
        else:
            break  # `# noqa: B006 - why`: the rest explains the codes (or `# noqa: - why` names none)
    return _with_codes(items)


def line_directive(line: str) -> Optional[Directive]:
    """The `# noqa` on one source line, or None. A line-level directive is any `# noqa` in a
    comment; text inside a string that looks like one is rare enough to accept, as flake8 does."""
    if _FILE_DIRECTIVE.match(line):
        return None  # a file-level directive, not a line one
    match = _DIRECTIVE.search(line)
    return _parse_line_rest(match.group("rest")) if match else None


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
        directive = _parse_file_rest(match.group("rest"))
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
            directive: Optional[Directive] = _parse_file_rest(match.group("rest"))
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
