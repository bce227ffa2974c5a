"""`accumlint run`: the click command. It imports torch only once it knows torch is there.

Options are parsed up to the script (or `-m module`); everything after it is the script's own,
untouched, so `accumlint run train.py --lr 3` passes `--lr 3` on, while an unknown option
before the script is a usage error rather than a script name."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from accumlint.runtime import TORCH_MISSING, torch_available

# Our options that take a value: the scan for the script skips their values.
_VALUED = {"--max-steps", "--report", "--format", "--sample-steps", "--verify-windows",
           "-m", "--module"}


class RunCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Split at the script or at `-m`'s value; hand click only our options, and the rest
        after a `--` so it reaches the arguments untouched."""
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                i += 1
                break
            if not arg.startswith("-") or arg == "-":
                break
            name = arg.split("=", 1)[0]
            if name in ("-m", "--module"):
                i += 1 if "=" in arg else 2
                break
            if arg.startswith("-m") and len(arg) > 2:  # -mpackage.module
                i += 1
                break
            i += 2 if name in _VALUED and "=" not in arg else 1
        head, tail = args[:i], args[i:]
        if head and head[-1] == "--":
            head = head[:-1]
        return super().parse_args(ctx, [*head, "--", *tail])


@click.command(
    "run",
    cls=RunCommand,
    help="Run a training script (or `-m module`) unmodified and report the gradient-accumulation "
         "bugs it shows at run time, under the same codes as `accumlint check`. Everything after "
         "the script or module goes to it.",
)
@click.option("-m", "--module", default=None, metavar="MODULE",
              help="Run a module as `python -m MODULE` would.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Stop the script cleanly after N optimizer steps.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the findings as JSON to FILE ({rank} is replaced per rank).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="How to print the findings.")
@click.option("--sample-steps", type=click.IntRange(min=0), default=20, show_default=True,
              help="Optimizer steps during which the loss-weight probe and graph walks run.")
@click.option("--verify", is_flag=True, default=False,
              help="Compare the first windows' accumulated gradient with the gradient of the "
                   "whole window (ACC001, ACC010, ACC013); costs a copy of the gradients per "
                   "backward during those windows.")
@click.option("--verify-windows", type=click.IntRange(min=1), default=4, show_default=True,
              help="How many windows --verify checks.")
@click.option("--exit-code/--exit-zero", "exit_on_findings", default=None,
              help="Exit 1 when there are findings (--exit-code) or keep the script's own status "
                   "(--exit-zero). Default: --exit-code, except in a rank under torchrun or another "
                   "launcher, where findings keep the script's status so that a checked run does "
                   "not read as a failed worker.")
@click.argument("script_and_args", nargs=-1, type=click.UNPROCESSED, metavar="[SCRIPT] [ARGS]...")
def run_command(module: Optional[str], max_steps: Optional[int], report_path: Optional[str],
                output_format: str, sample_steps: int, verify: bool, verify_windows: int,
                exit_on_findings: Optional[bool], script_and_args: tuple[str, ...]) -> None:
    args = list(script_and_args)
    script: Optional[str] = None
    if module is None:
        if not args:
            raise click.UsageError("give a script to run, or -m MODULE")
        script, args = args[0], args[1:]
    if not torch_available():
        click.echo(TORCH_MISSING, err=True)
        sys.exit(2)
    from accumlint.runtime.runner import RunConfig, run

    status = run(RunConfig(script, args, max_steps, report_path, output_format, sample_steps,
                           module, verify_windows if verify else 0, exit_on_findings))
    sys.exit(status)


def main(argv: Optional[list[str]] = None, **kwargs: Any) -> None:
    run_command.main(args=argv, prog_name="accumlint run", **kwargs)
