"""Running a user's script unmodified, as `python script.py args` would, with the checks installed
first; then the end-of-run checks and the report. Returns the exit status."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from typing import Optional, Sequence

from accumlint.runtime import report
from accumlint.runtime.findings import RuntimeFinding


@dataclass
class RunConfig:
    script: str
    args: Sequence[str]
    max_steps: Optional[int] = None
    report_path: Optional[str] = None
    output_format: str = "text"
    sample_steps: int = 20


def _rank() -> tuple[int, int]:
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def report_path_for_rank(path: str) -> str:
    """Each torchrun rank writes its own report: `{rank}` in the name, or `.rankN` before the suffix."""
    rank, world = _rank()
    if "{rank}" in path:
        return path.replace("{rank}", str(rank))
    if world > 1:
        root, ext = os.path.splitext(path)
        return f"{root}.rank{rank}{ext}"
    return path


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run(config: RunConfig) -> int:
    from accumlint.runtime.monitor import Monitor, Options, StopTraining
    from accumlint.runtime.patches import Installation

    script = os.path.abspath(config.script)
    if not os.path.isfile(script):
        print(f"accumlint run: no such script: {config.script}", file=sys.stderr)
        return 2
    monitor = Monitor(Options(max_steps=config.max_steps, sample_steps=config.sample_steps))
    installation = Installation(monitor).install()
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [config.script, *config.args]
    if sys.path:
        sys.path[0] = os.path.dirname(script)  # as `python script.py` sets it
    else:
        sys.path.insert(0, os.path.dirname(script))
    status = 0
    completed = False
    try:
        runpy.run_path(script, run_name="__main__")
        completed = True
    except StopTraining:
        print(f"accumlint run: stopped after {config.max_steps} optimizer steps", file=sys.stderr)
    except SystemExit as exit_:
        status = _exit_code(exit_.code)
        completed = status == 0
    except KeyboardInterrupt:
        status = 130
    except BaseException:  # the script's own error: print it as python would, then report
        traceback.print_exc()
        status = 1
    finally:
        try:
            monitor.finish(completed)
        finally:
            installation.uninstall()
            sys.argv = saved_argv
            if saved_path0 is not None and sys.path:
                sys.path[0] = saved_path0
    findings = monitor.findings.all()
    emit(findings, config)
    return 1 if findings else status


def emit(findings: list[RuntimeFinding], config: RunConfig) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    rank, world = _rank()
    if world > 1:
        for finding in findings:
            finding.evidence["rank"] = rank
    if config.output_format == "json":
        sys.stdout.write(report.to_json(findings) + "\n")
    else:
        report.write_text(findings, sys.stdout)
    sys.stdout.flush()
    if config.report_path:
        path = report_path_for_rank(config.report_path)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(report.to_json(findings) + "\n")
