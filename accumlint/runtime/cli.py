"""`accumlint run`: the click command. It imports torch only once it knows torch is there."""

from __future__ import annotations

import sys

import click

from accumlint.runtime import TORCH_MISSING, torch_available


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    help="Run a training script unmodified and report the gradient-accumulation bugs it shows "
         "at run time, under the same codes as `accumlint check`.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Stop the script cleanly after N optimizer steps.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the findings as JSON to FILE ({rank} is replaced per rank).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="How to print the findings.")
@click.option("--sample-steps", type=click.IntRange(min=0), default=20, show_default=True,
              help="Optimizer steps during which the loss-weight probe and graph walks run.")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def run_command(max_steps, report_path, output_format, sample_steps, script, script_args):
    if not torch_available():
        click.echo(TORCH_MISSING, err=True)
        sys.exit(2)
    from accumlint.runtime.runner import RunConfig, run

    status = run(RunConfig(script, list(script_args), max_steps, report_path, output_format,
                           sample_steps))
    sys.exit(status)
