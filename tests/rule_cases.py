"""What the per-rule case files share: run one rule on a snippet, read the rows a snippet marks
with `# <ACCnnn`, and assert a snippet is reported exactly there, or is clean."""

from __future__ import annotations

import textwrap

from tests.snippets import findings_of


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


class RuleCases:
    def __init__(self, code: str) -> None:
        self.code = code
        self.select = {code}

    def found(self, source: str, filename: str = "case.py") -> list:
        return findings_of(source, path=filename, select=self.select)

    def marked(self, source: str) -> set[int]:
        return {row for row, line in enumerate(source.splitlines(), 1) if f"# <{self.code}" in line}

    def assert_reported(self, source: str, filename: str = "case.py") -> list:
        findings = self.found(source, filename)
        assert self.marked(source)
        assert {f.location.row for f in findings} == self.marked(source), [(f.location.row, f.message) for f in findings]
        return findings

    def assert_clean(self, source: str, filename: str = "case.py") -> None:
        got = [(f.location.row, f.message) for f in self.found(source, filename)]
        assert got == [], f"{got}\n{source}"
