"""The checker in every process a launcher starts (`torchrun`, `python -m torch.distributed.run`,
`accelerate launch`, `deepspeed`), whatever the entry point:

    ACCUMLINT_RUN="--report accumlint.{rank}.json" \\
    PYTHONPATH="$(python -m accumlint.runtime.autostart)${PYTHONPATH:+:$PYTHONPATH}" \\
    torchrun --nproc_per_node 2 train.py --lr 3e-4

`python -m accumlint.runtime.autostart` writes a small `sitecustomize.py` into a folder of its
own and prints that folder. Python imports `sitecustomize` at start-up in every process; ours
does nothing unless ACCUMLINT_RUN is set, then installs the checker (its value holds
`accumlint run`'s options) and reports at exit. It leaves the launcher's own process, `python -c`
helpers (DataLoader workers, compile workers) and `accumlint run` itself alone, and then hands
over to any other `sitecustomize` on the path.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shlex
import sys
import tempfile
from types import TracebackType
from typing import Optional

ENV = "ACCUMLINT_RUN"
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "accelerate",
                     "accelerate.commands.launch", "accelerate.commands.accelerate_cli",
                     "deepspeed", "deepspeed.launcher.runner", "deepspeed.launcher.launch",
                     "accumlint.run", "accumlint")
_LAUNCHER_SCRIPTS = ("torchrun", "accelerate", "deepspeed", "accumlint")

SITECUSTOMIZE = '''\
"""Written by `python -m accumlint.runtime.autostart`: installs accumlint's runtime checker in
this process when ACCUMLINT_RUN is set, then runs the next sitecustomize on the path."""
import os as _os
import sys as _sys

if _os.environ.get("ACCUMLINT_RUN"):
    try:
        from accumlint.runtime.autostart import start as _start
        _start()
    except Exception as _error:  # never stop the user's process over the checker
        print(f"accumlint: runtime checker not installed: {_error!r}", file=_sys.stderr)


def _chain():
    import importlib.machinery
    import importlib.util
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_chain()
'''


def hook_dir() -> str:
    """The folder holding our sitecustomize.py (written once per user and content)."""
    folder = os.path.join(tempfile.gettempdir(), f"accumlint-autostart-{os.getuid()}"
                          if hasattr(os, "getuid") else "accumlint-autostart")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "sitecustomize.py")
    try:
        with open(path, encoding="utf-8") as handle:
            current = handle.read()
    except OSError:
        current = None
    if current != SITECUSTOMIZE:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(SITECUSTOMIZE)
        os.replace(tmp, path)
    return folder


def is_training_process(orig_argv: list[str]) -> bool:
    """False for a launcher's own process, `python -c` helpers and accumlint itself."""
    args = orig_argv[1:]
    while args and args[0].startswith("-") and args[0] not in ("-m", "-c"):
        args = args[1:]  # interpreter flags such as -u, -O
    if not args:
        return False
    if args[0] == "-c":
        return False
    if args[0] == "-m":
        module = args[1] if len(args) > 1 else ""
        return module not in _LAUNCHER_MODULES
    return os.path.basename(args[0]) not in _LAUNCHER_SCRIPTS


def parse_options(text: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=ENV, add_help=False)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--report", default=None)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--sample-steps", type=int, default=20)
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--verify-windows", type=int, default=4)
    words = [] if text.strip() in ("1", "true", "yes") else shlex.split(text)
    return parser.parse_args(words)


def start() -> None:
    if not is_training_process(list(getattr(sys, "orig_argv", sys.argv))):
        return
    options = parse_options(os.environ.get(ENV, "1"))
    from accumlint.runtime import runner
    from accumlint.runtime.patches import Installation

    config = runner.RunConfig(None, [], options.max_steps, options.report, options.format,
                              options.sample_steps, None,
                              options.verify_windows if options.verify else 0)
    monitor = runner.make_monitor(config)
    installation = Installation(monitor).install()
    failure: list[str] = []
    previous_hook = sys.excepthook

    def excepthook(kind: type[BaseException], error: BaseException,
                   trace: Optional[TracebackType]) -> None:
        failure.append(runner.describe(error))
        previous_hook(kind, error, trace)

    sys.excepthook = excepthook

    @atexit.register
    def report() -> None:
        error = failure[0] if failure else None
        try:
            monitor.finish(error is None)
        finally:
            installation.uninstall()
        stopped = monitor.total_steps if monitor.stopped else None
        runner.emit(monitor.findings.all(), config.output_format, config.report_path,
                    runner.summarise(monitor, 1 if error else 0, error, stopped))
        release_script_objects()


def release_script_objects() -> None:
    """Drop the script's globals now, while the interpreter is whole, as `accumlint run` does
    when the script returns. Left to interpreter shutdown, a DDP model whose reducer holds our
    Python communication hook was seen to abort a rank ("terminate called without an active
    exception") about one run in six on a loaded machine. This handler is registered first, so
    it runs after every other atexit handler of the script."""
    import gc

    main = sys.modules.get("__main__")
    if main is None:
        return
    for name in [n for n in vars(main) if not n.startswith("__")]:
        del vars(main)[name]
    gc.collect()


if __name__ == "__main__":
    print(hook_dir())
