"""Every catalog page is a test: its bad example must be reported under its own code and nothing
else, its fixed example must be clean, and the fix must turn the one into the other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from accumlint.engine import check_source, fix_source
from accumlint.registry import RULES
from accumlint.registry import RUNTIME_ONLY as RUNTIME_ONLY_RULES

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"

REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")
SAFETIES = {"safe", "unsafe", "sometimes", "none"}

_SECTION = re.compile(r"^## (?P<title>.+?)\s*$", re.M)
_PYTHON_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```\s*$", re.M | re.S)


def _sections(text: str) -> dict[str, str]:
    heads = list(_SECTION.finditer(text))
    out = {}
    for head, nxt in zip(heads, heads[1:] + [None]):
        out[head.group("title")] = text[head.end(): nxt.start() if nxt else len(text)]
    return out


def _first_block(body: str) -> str:
    match = _PYTHON_BLOCK.search(body)
    assert match, "section has no ```python block"
    return match.group("code")


class Page:
    def __init__(self, code: str) -> None:
        self.code = code
        self.path = RULES_DIR / f"{code}.md"
        self.text = self.path.read_text(encoding="utf-8")
        self.title = self.text.splitlines()[0]
        self.sections = _sections(self.text)

    @property
    def bad(self) -> str:
        return _first_block(self.sections["Example"])

    @property
    def fixed(self) -> str:
        return _first_block(self.sections["Use instead"])

    @property
    def safety(self) -> str:
        first = self.sections["Fix safety"].strip().splitlines()[0]
        match = re.fullmatch(r"Fix: (\w+)", first.strip())
        assert match, f"first line of 'Fix safety' must be 'Fix: <safety>', got {first!r}"
        return match.group(1)


CODES = sorted(RULES)
# A runtime-only rule's examples are honoured by tests/runtime/test_runtime_only_pages.py under
# `accumlint run --verify`; here the static checker must be silent on both.
RUNTIME_ONLY = sorted(info.code for info in RUNTIME_ONLY_RULES)
STATIC = [c for c in CODES if c not in RUNTIME_ONLY]
FIXABLE = [c for c in STATIC if RULES[c].fix is not None]
UNSAFE = [c for c in STATIC if RULES[c].fix == "unsafe"]


def _codes(result) -> list[str]:
    assert result.error is None, result.error
    return [f.code for f in result.findings]


def _where(result) -> list[tuple[str, int]]:
    return [(f.code, f.location.row) for f in result.findings]


@pytest.mark.parametrize("code", CODES)
def test_page_exists_with_sections(code):
    page = Page(code)
    assert page.title == f"# {code}: {RULES[code].name}"
    missing = [s for s in REQUIRED_SECTIONS if s not in page.sections]
    assert not missing, f"{page.path.name} lacks sections {missing}"
    # The order is ruff's: what, why, example, use instead, fix safety, ..., references.
    order = [s for s in page.sections if s in REQUIRED_SECTIONS]
    assert order == list(REQUIRED_SECTIONS)


@pytest.mark.parametrize("code", CODES)
def test_fix_line_matches_registry(code):
    page = Page(code)
    assert page.safety in SAFETIES
    assert page.safety == (RULES[code].fix or "none")


@pytest.mark.parametrize("code", CODES)
def test_examples_are_valid_python(code):
    page = Page(code)
    compile(page.bad, f"{code}-bad", "exec")
    compile(page.fixed, f"{code}-fixed", "exec")
    assert page.bad != page.fixed


@pytest.mark.parametrize("code", STATIC)
def test_bad_example_reported_with_its_code_only(code):
    page = Page(code)
    result = check_source(page.bad, f"{code}-bad.py")
    found = _codes(result)
    assert code in found, f"{code} not reported on its own bad example; got {_where(result)}"
    assert set(found) == {code}, f"bad example of {code} also reports {_where(result)}"


@pytest.mark.parametrize("code", CODES)
def test_fixed_example_is_clean(code):
    page = Page(code)
    result = check_source(page.fixed, f"{code}-fixed.py")
    assert _codes(result) == [], f"fixed example of {code} reports {_where(result)}"


@pytest.mark.parametrize("code", FIXABLE)
def test_fix_gives_use_instead(code):
    page = Page(code)
    result = fix_source(page.bad, f"{code}-bad.py", unsafe_fixes=(page.safety != "safe"))
    assert result.error is None, result.error
    assert result.fixed_source is not None, f"no fix applied to {code}'s bad example"
    assert result.fixed_source == page.fixed
    assert result.findings == []


@pytest.mark.parametrize("code", FIXABLE)
def test_fix_is_idempotent(code):
    page = Page(code)
    unsafe = page.safety != "safe"
    once = fix_source(page.bad, f"{code}-bad.py", unsafe_fixes=unsafe)
    assert once.error is None, once.error
    text = once.fixed_source if once.fixed_source is not None else page.bad
    twice = fix_source(text, f"{code}-bad.py", unsafe_fixes=unsafe)
    assert twice.error is None, twice.error
    assert twice.fixed_source is None, "fixing a second time changed the text again"


@pytest.mark.parametrize("code", UNSAFE)
def test_unsafe_fix_needs_opt_in(code):
    page = Page(code)
    result = fix_source(page.bad, f"{code}-bad.py", unsafe_fixes=False)
    assert result.error is None, result.error
    assert result.fixed_source is None, "an unsafe fix was applied without --unsafe-fixes"
    assert code in _codes(result), "the finding must still be reported when its fix is withheld"


@pytest.mark.parametrize("code", RUNTIME_ONLY)
def test_static_checker_is_silent_on_runtime_only_examples(code):
    page = Page(code)
    assert _codes(check_source(page.bad, f"{code}-bad.py")) == []
    assert _codes(check_source(page.fixed, f"{code}-fixed.py")) == []


@pytest.mark.parametrize("code", [c for c in STATIC if RULES[c].fix is None])
def test_report_only_rule_offers_no_fix(code):
    page = Page(code)
    result = check_source(page.bad, f"{code}-bad.py")
    ours = [f for f in result.findings if f.code == code]
    assert ours, f"{code} not reported on its own bad example"
    assert all(f.fix is None for f in ours)
    assert fix_source(page.bad, f"{code}-bad.py", unsafe_fixes=True).fixed_source is None


@pytest.mark.parametrize("code", [c for c in CODES if RULES[c].fix in ("safe", "unsafe", "sometimes")])
def test_fix_applicability_label(code):
    """The finding on the bad example carries a fix labelled as the page says."""
    page = Page(code)
    result = check_source(page.bad, f"{code}-bad.py")
    ours = [f for f in result.findings if f.code == code]
    assert ours and all(f.fix is not None for f in ours), f"{code}'s bad example has no fix offered"
    if page.safety in ("safe", "unsafe"):
        assert {f.fix.applicability for f in ours} == {page.safety}


def test_no_page_without_a_rule():
    pages = {p.stem for p in RULES_DIR.glob("ACC*.md")}
    assert pages == set(RULES)


# Pages may also carry a framework's own pair of examples ("## Keras example" and "## Keras: use
# instead"): the same contract, in that framework's shape.
FRAMEWORK_EXAMPLES = ("Keras",)
FRAMEWORK_PAIRS = [
    (code, framework) for code in STATIC for framework in FRAMEWORK_EXAMPLES
    if f"{framework} example" in Page(code).sections
]


def _framework_pair(code: str, framework: str) -> tuple[str, str]:
    page = Page(code)
    return _first_block(page.sections[f"{framework} example"]), _first_block(page.sections[f"{framework}: use instead"])


def test_framework_pairs_exist():
    assert {code for code, _ in FRAMEWORK_PAIRS} >= {"ACC001", "ACC005", "ACC007", "ACC010"}


@pytest.mark.parametrize("code,framework", FRAMEWORK_PAIRS)
def test_framework_example_reported_with_its_code_only(code, framework):
    bad, fixed = _framework_pair(code, framework)
    assert bad != fixed
    result = check_source(bad, f"{code}-{framework}-bad.py")
    assert set(_codes(result)) == {code}, f"{framework} example of {code} reports {_where(result)}"
    clean = check_source(fixed, f"{code}-{framework}-fixed.py")
    assert _codes(clean) == [], f"{framework} 'use instead' of {code} reports {_where(clean)}"


@pytest.mark.parametrize("code,framework", FRAMEWORK_PAIRS)
def test_framework_fix_gives_use_instead(code, framework):
    """Where the finding offers a fix, applying it gives the page's 'use instead' text."""
    bad, fixed = _framework_pair(code, framework)
    offered = [f.fix for f in check_source(bad, f"{code}-{framework}-bad.py").findings if f.fix is not None]
    if not offered:
        assert fix_source(bad, f"{code}-bad.py", unsafe_fixes=True).fixed_source is None
        return
    result = fix_source(bad, f"{code}-{framework}-bad.py", unsafe_fixes=any(f.applicability != "safe" for f in offered))
    assert result.error is None, result.error
    assert result.fixed_source == fixed
    assert result.findings == []
