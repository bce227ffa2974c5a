"""The `accumlint` command: check, rule, and (lazily, as it needs torch) run."""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import TYPE_CHECKING, Optional, Sequence, TextIO

import click

from accumlint import __version__
from accumlint.model import display_path
from accumlint.registry import RULES, resolve_selection

if TYPE_CHECKING:
    from accumlint.reporting import Report

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _error(line: str) -> None:
    click.echo(line, err=True)


# -- lazy subcommands --------------------------------------------------------------------------

# name -> (module, attribute, one-line help). Imported only when that command is invoked, so
# `accumlint check` and `accumlint --help` never import torch.
LAZY_COMMANDS = {
    "run": (
        "accumlint.runtime.cli",
        "run_command",
        "Run a training script with runtime accumulation checks (needs torch).",
    ),
    "server": (
        "accumlint.server",
        "server_command",
        "Run the language server for editors (needs pygls: accumlint[lsp]).",
    ),
}
# The optional dependencies (extras) each lazy command needs.
EXTRAS = {"run": "runtime", "server": "lsp"}


def _unavailable(name: str, why: str) -> click.Command:
    def callback(**_: object) -> None:
        _error(f"accumlint {name}: error: {why}")
        sys.exit(EXIT_ERROR)

    return click.Command(
        name,
        callback=callback,
        help=why,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    )


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in LAZY_COMMANDS:
            return super().get_command(ctx, name)
        module_name, attribute, _help = LAZY_COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (exc.name == "accumlint.runtime" or exc.name.startswith(module_name)):
                return _unavailable(name, "the runtime checker is not part of this installation")
            package = exc.name.split(".")[0] if exc.name else "a missing package"
            return _unavailable(name, f"needs {package} (pip install 'accumlint[{EXTRAS.get(name, name)}]')")
        command: click.Command = getattr(module, attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, c.get_short_help_str(70)) for n, c in self.commands.items() if not c.hidden]
        rows += [(name, spec[2]) for name, spec in LAZY_COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="accumlint", message="%(prog)s %(version)s")
def cli() -> None:
    """Find and fix gradient-accumulation bugs in PyTorch training loops.

    Start with `accumlint check .`; `accumlint rule --all` lists the rules.
    """


# -- check -------------------------------------------------------------------------------------


def _selectors(ctx: click.Context, param: click.Parameter, values: Sequence[str]) -> Optional[frozenset[str]]:
    """--select/--ignore take codes or prefixes, comma-separated or repeated."""
    if not values:
        return None
    items = [item for value in values for item in value.split(",") if item.strip()]
    try:
        return frozenset(resolve_selection(items))
    except ValueError as exc:
        raise click.BadParameter(f"{exc} (see `accumlint rule --all`)") from None


def _format_choices() -> list[str]:
    from accumlint.reporting import FORMATS

    return list(FORMATS)


CHECK_EPILOG = """\b
Examples:
  accumlint check .                      check every .py file below here
  accumlint check train.py --diff        show what --fix would change
  accumlint check src --fix              apply the safe fixes in place
  accumlint check . --select ACC001,ACC005 --format json
  accumlint check . --ignore ACC009 --statistics
  accumlint check - --stdin-filename train.py < train.py

\b
Exit status:
  0  no findings (or --exit-zero)
  1  findings remain (after --fix: findings that could not be fixed;
     with --diff: also when a fix would change a file)
  2  a usage or configuration error, an internal error, or a file that
     could not be checked (syntax error, undecodable, unreadable,
     missing, or syntax of a newer Python: counted apart); the other
     files are still checked and reported

\b
Configuration: the nearest pyproject.toml with a [tool.accumlint] table
(keys: select, ignore, exclude, per-file-ignores), or --config FILE.
--select replaces the configured selection, --ignore removes from it.
`exclude` and `per-file-ignores` take gitignore-style patterns relative
to the configuration's folder. Folders are walked without what
.gitignore ignores. A path named on the command line is checked even
when `exclude` matches it, unless --force-exclude is given (the
pre-commit hooks give it).
"""


@cli.command(epilog=CHECK_EPILOG)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, callback=_selectors, metavar="CODES",
              help="Check only these rule codes or prefixes (e.g. ACC001,ACC00).")
@click.option("--ignore", multiple=True, callback=_selectors, metavar="CODES",
              help="Skip these rule codes or prefixes.")
@click.option("--fix", is_flag=True, help="Apply fixes in place (safe ones, unless --unsafe-fixes).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (or offer) fixes that may change behaviour.")
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes; write nothing.")
@click.option("--show-fixes", is_flag=True, help="Say what each fix does (and, with --fix, what was fixed).")
@click.option("--format", "output_format", type=click.Choice(_format_choices()), default="text",
              show_default=True, help="Output format (`full` shows each finding's source line).")
@click.option("--output-file", "-o", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Write the report to FILE instead of standard output.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain (errors still exit 2).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Use this pyproject.toml or TOML file instead of searching for one.")
@click.option("--force-exclude", is_flag=True,
              help="Apply `exclude` and .gitignore to paths named on the command line too.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=True, show_default=True,
              help="Skip what .gitignore ignores when walking folders.")
@click.option("--stdin-filename", metavar="NAME",
              help="Read the source from standard input and report it as NAME (config applies to NAME).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the results cache (.accumlint_cache).")
@click.option("--jobs", "-j", "worker_count", type=click.IntRange(min=1), default=None, metavar="N",
              help="Worker processes (default: the usable cores; few files are checked in-process).")
@click.option("-v", "--verbose", is_flag=True, help="Say which configuration and files are used; "
              "show tracebacks of internal errors.")
@click.version_option(__version__, "--version", prog_name="accumlint", message="%(prog)s %(version)s")
def check(paths: tuple[str, ...], select: Optional[frozenset[str]], ignore: Optional[frozenset[str]], fix: bool,
          unsafe_fixes: bool, diff: bool, show_fixes: bool, output_format: str, output_file: Optional[str],
          statistics: bool, exit_zero: bool, config_file: Optional[str], force_exclude: bool,
          respect_gitignore: bool, stdin_filename: Optional[str], no_cache: bool, worker_count: Optional[int],
          verbose: bool) -> None:
    """Check Python files and notebooks (folders are searched recursively) for accumulation bugs.

    `-` reads standard input (name it with --stdin-filename)."""
    from accumlint.checking import Mode
    from accumlint.config import ConfigError, Resolver, Selection
    from accumlint.discovery import Discovery, discover, forced_exclusion
    from accumlint.reporting import FORMATS, Report, Sources
    from accumlint.reporting import statistics as stats
    from accumlint.runner import Task, cache_factory, run

    from_stdin = stdin_filename is not None or paths == ("-",)
    if from_stdin and [p for p in paths if p != "-"]:
        raise click.UsageError("give either `-` (standard input) or paths, not both")
    mode = Mode(fix=fix, diff=diff, unsafe_fixes=unsafe_fixes, count_fixed=show_fixes and fix,
                with_edits=output_format in EDIT_FORMATS, write=not from_stdin)
    selection = Selection(select=select, ignore=ignore or frozenset())
    given: dict[str, bytes] = {}
    try:
        resolver = Resolver(config_file)
        if from_stdin:
            name = stdin_filename or "-"
            found = Discovery()
            why = forced_exclusion(name, resolver, respect_gitignore) if force_exclude and name != "-" else None
            if why:
                found.skipped.append(f"{name}: {why}")
            else:
                found.files = [name]
            if found.files:
                given[name] = sys.stdin.buffer.read()
        else:
            found = discover(paths or (".",), resolver, force_exclude, respect_gitignore)
        tasks = [Task(f, selection.codes_for(f, resolver.for_path(f)), given.get(f)) for f in found.files]
    except ConfigError as exc:
        _error(str(exc))
        sys.exit(EXIT_ERROR)
    for line in found.warnings:
        _error(line)
    if verbose:
        for source in resolver.sources():
            _error(f"note: using configuration {source}")
        for line in found.skipped:
            _error(f"note: skipped {line}")
        _error(f"note: checking {len(tasks)} file{'s' if len(tasks) != 1 else ''}")

    caches = None
    if not no_cache:
        from pathlib import Path

        from accumlint.cache import find_project_root

        caches = cache_factory(find_project_root(Path.cwd()), mode)
    outcomes = run(tasks, mode, jobs=worker_count, caches=caches)
    results = [o.result for o in outcomes]

    for result in results:
        for notice in result.notices:
            _error(notice.render())
    errors = sorted([*found.errors, *(r.error for r in results if r.error is not None)],
                    key=lambda e: (e.filename, e.cell or 0))
    for error in errors:
        _error(f"{display_path(error.filename, error.cell)}: error: {error.message}")
    tracebacks = [o.traceback for o in outcomes if o.traceback]
    if verbose:
        for text in tracebacks:
            _error(text.rstrip())
    elif any(e.message.startswith("internal error") for e in errors):
        _error("note: that is a bug in accumlint; run with --verbose for the traceback and report it")
    if not found.files and not found.errors:
        _error("warning: No Python files found under the given path(s).")

    out = _output(output_file)
    report = Report(
        results=results, errors=errors, mode=mode, show_fixes=show_fixes,
        fixes_applied=sum(r.fixes_applied for r in results if r.error is None),
        sources=Sources(given), color=output_file is None and _use_color(out),
    )
    for outcome in outcomes:
        if outcome.fixed_codes and outcome.result.error is None:
            report.fixed_files[outcome.result.filename] = outcome.fixed_codes
            report.fixed_codes.update(outcome.fixed_codes)

    diffs = "".join(o.diff for o in outcomes)
    if from_stdin and fix and not diff:
        # Like ruff: the fixed text (or the text as it was) on stdout, the report on stderr.
        for outcome in outcomes:
            fixed_text = outcome.fixed if outcome.fixed is not None else given.get(outcome.result.filename, b"")
            sys.stdout.buffer.write(fixed_text)
        sys.stdout.flush()
        if output_file is None:
            out = sys.stderr
    try:
        if diff:
            out.write(diffs)
            _diff_summary(report)
        elif statistics:
            stats.emit(report, out, output_format)
        else:
            FORMATS[output_format](report, out)
    finally:
        if output_file is not None:
            out.close()

    if errors:
        sys.exit(EXIT_ERROR)
    if (report.findings or diffs) and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _output(output_file: Optional[str]) -> TextIO:
    if output_file is None:
        return sys.stdout
    try:
        return open(output_file, "w", encoding="utf-8")
    except OSError as exc:
        _error(f"accumlint: error: cannot write {output_file}: {exc.strerror or exc}")
        sys.exit(EXIT_ERROR)


def _use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (https://no-color.org);
    FORCE_COLOR turns it on anywhere."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _diff_summary(report: Report) -> None:
    from accumlint.reporting.text import _plural

    n = report.fixes_applied
    line = f"Would fix {_plural(n, 'error')}." if n else "No errors would be fixed."
    remaining = len(report.findings)
    if remaining:
        line = line[:-1] + f" ({remaining} would remain)."
    hidden = report.hidden()
    if hidden:
        was = "fix" if hidden == 1 else "fixes"
        line += f" {hidden} hidden {was} can be enabled with the `--unsafe-fixes` option."
    _error(line)


# Formats that print each fix's text edits; the others need only its message and safety.
EDIT_FORMATS = {"json", "sarif"}


# -- rule --------------------------------------------------------------------------------------


def _lookup(code: str) -> Optional[str]:
    wanted = code.strip().upper()
    if wanted in RULES:
        return wanted
    by_name = {info.name: info.code for info in RULES.values()}
    return by_name.get(code.strip().lower())


@cli.command(epilog="\b\nExamples:\n  accumlint rule ACC001\n  accumlint rule --all\n  accumlint rule --all --format json")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule: code, name, fix safety, summary.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain a rule: print its catalog page (by code, like ACC001, or by name)."""
    from accumlint import catalog

    if show_all:
        _list_rules(output_format)
        return
    if not code:
        raise click.UsageError("give a rule code (e.g. `accumlint rule ACC001`) or --all")
    found = _lookup(code)
    if found is None:
        _error(f"accumlint rule: error: unknown rule {code!r} (see `accumlint rule --all`)")
        sys.exit(EXIT_ERROR)
    info = RULES[found]
    text = catalog.page(found)
    if output_format == "json":
        click.echo(json.dumps({**_rule_row(found), "page": text}, indent=2))
        return
    if text is None:
        _error(f"note: the catalog page for {found} is missing from this installation")
        click.echo(f"# {found}: {info.name}\n\n{info.summary}\n\nFix: {_fix_label(info.fix)}\n\n{info.url}")
        return
    click.echo(text, nl=not text.endswith("\n"))


def _fix_label(fix: Optional[str]) -> str:
    return fix or "none"


def _rule_row(code: str) -> dict[str, Optional[str]]:
    info = RULES[code]
    return {"code": code, "name": info.name, "fix": info.fix, "summary": info.summary, "url": info.url}


def _list_rules(output_format: str) -> None:
    codes = sorted(RULES)
    if output_format == "json":
        click.echo(json.dumps([_rule_row(c) for c in codes], indent=2))
        return
    name_width = max(len(RULES[c].name) for c in codes)
    fix_width = max(len(_fix_label(RULES[c].fix)) for c in codes)
    for c in codes:
        info = RULES[c]
        click.echo(f"{c}  {info.name:<{name_width}}  {_fix_label(info.fix):<{fix_width}}  {info.summary}")


# -- entry point -------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Console entry point: click handles usage errors (exit 2); anything else unexpected is
    reported in one line (with the traceback under --verbose), never as a bare traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=args, prog_name="accumlint")
    except Exception as exc:  # click's standalone mode has already turned usage errors into exits
        _error(f"accumlint: error: internal error: {type(exc).__name__}: {exc}")
        if "-v" in args or "--verbose" in args:
            _error(traceback.format_exc().rstrip())
        else:
            _error("note: that is a bug in accumlint; run with --verbose for the traceback and report it")
        sys.exit(EXIT_ERROR)
