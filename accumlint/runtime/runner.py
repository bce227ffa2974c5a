"""Running a user's script or module unmodified, as `python script.py args` or `python -m module
args` would, with the checks installed first; then the end-of-run checks and the report.
Returns the exit status."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Sequence

from accumlint.runtime import report
from accumlint.runtime.findings import RuntimeFinding

if TYPE_CHECKING:
    from accumlint.runtime.monitor import Monitor


@dataclass
class RunConfig:
    script: Optional[str]  # a path, or None with `module`
    args: Sequence[str]
    max_steps: Optional[int] = None
    report_path: Optional[str] = None
    output_format: str = "text"
    sample_steps: int = 20
    module: Optional[str] = None
    verify_windows: int = 0
    # Exit 1 when there are findings: True (--exit-code), False (--exit-zero), None: yes, except in
    # a rank of a launcher, where a non-zero status reads as a crashed worker (torchrun's
    # ChildFailedError) though the script ran to its end.
    exit_on_findings: Optional[bool] = None

    @property
    def target(self) -> str:
        return self.script if self.script is not None else f"-m {self.module}"


def under_launcher() -> bool:
    """A rank started by torchrun / torch.distributed.run (or a launcher that sets the same)."""
    env = os.environ
    return "TORCHELASTIC_RUN_ID" in env or ("LOCAL_RANK" in env and "WORLD_SIZE" in env)


def _rank() -> tuple[int, int]:
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def report_path_for_rank(path: str) -> str:
    """Each rank writes its own report: `{rank}` in the name, or `.rankN` before the suffix."""
    rank, world = _rank()
    if "{rank}" in path:
        return path.replace("{rank}", str(rank))
    if world > 1:
        root, ext = os.path.splitext(path)
        return f"{root}.rank{rank}{ext}"
    return path


def exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def make_monitor(config: RunConfig) -> "Monitor":
    from accumlint.runtime.monitor import Monitor, Options

    return Monitor(Options(max_steps=config.max_steps, sample_steps=config.sample_steps,
                           verify_windows=config.verify_windows))


def run(config: RunConfig) -> int:
    from accumlint.runtime.monitor import StopTraining
    from accumlint.runtime.patches import Installation

    if config.script is not None:
        script = os.path.abspath(config.script)
        if not os.path.isfile(script):
            print(f"accumlint run: no such script: {config.script}", file=sys.stderr)
            return 2
    monitor = make_monitor(config)
    installation = Installation(monitor).install()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    status, error, completed, stopped_at = 0, None, False, None
    try:
        if config.script is not None:
            sys.argv = [config.script, *config.args]
            _set_path0(os.path.dirname(script))  # as `python script.py` sets it
            runpy.run_path(script, run_name="__main__")
        else:
            sys.argv = [config.module or "", *config.args]  # runpy puts the module's path here
            _set_path0(os.getcwd())  # as `python -m` sets it
            runpy.run_module(config.module or "", run_name="__main__", alter_sys=True)
        completed = True
    except StopTraining as stop:
        stopped_at = stop.steps
        print(f"accumlint run: stopped after {config.max_steps} optimizer steps", file=sys.stderr)
    except SystemExit as exit_:
        status = exit_code(exit_.code)
        completed = status == 0
    except KeyboardInterrupt:
        status, error = 130, "KeyboardInterrupt"
    except BaseException as exc:  # the script's own error: print it as python would, then report
        traceback.print_exc()
        status, error = 1, describe(exc)
    finally:
        try:
            monitor.finish(completed)
        finally:
            installation.uninstall()
            sys.argv = saved_argv
            sys.path[:] = saved_path
    findings = monitor.findings.all()
    emit(findings, config.output_format, config.report_path, summarise(monitor, status, error,
                                                                       stopped_at))
    if not findings:
        return status
    exit_on_findings = config.exit_on_findings
    if exit_on_findings is None:
        exit_on_findings = not under_launcher()
        if not exit_on_findings:
            rank, _ = _rank()
            print(f"accumlint run: rank {rank} has {len(findings)} finding{'s' if len(findings) != 1 else ''} "
                  f"(see above); exit status {status} as the script's own under a launcher: "
                  f"--exit-code makes findings exit 1", file=sys.stderr)
    return 1 if exit_on_findings else status


def _set_path0(path: str) -> None:
    if sys.path:
        sys.path[0] = path
    else:
        sys.path.insert(0, path)


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def summarise(monitor: "Monitor", status: int, error: Optional[str],
              stopped_at: Optional[int]) -> report.RunSummary:
    notes = monitor.verifier.notes if monitor.verifier is not None else []
    return report.RunSummary(monitor.total_steps, monitor.windows_closed,
                             monitor.backward_count, status, error, stopped_at, notes)


def emit(findings: list[RuntimeFinding], output_format: str, report_path: Optional[str],
         summary: report.RunSummary) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    rank, world = _rank()
    if world > 1:
        for finding in findings:
            finding.evidence["rank"] = rank
    if output_format == "json":
        sys.stdout.write(report.to_json(findings) + "\n")
        for note in summary.notes:
            sys.stderr.write(f"accumlint run: note: {note}\n")
        sys.stderr.write(summary.line(len(findings)) + "\n")
    else:
        report.write_text(findings, sys.stdout, summary)
    sys.stdout.flush()
    if report_path:
        path = report_path_for_rank(report_path)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(report.to_json(findings) + "\n")
