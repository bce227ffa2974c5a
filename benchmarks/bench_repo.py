"""A whole repository against CPython's parser: `accumlint check . --jobs 1 --no-cache` in it.

    python benchmarks/bench_repo.py DIR [--repeat 1]

Prints the number of .py files and their lines, the CPU time of `ast.parse` of every one of them
in a fresh interpreter (the yardstick), accumlint's wall and CPU time (user + system) and peak
memory, the ratio of accumlint's CPU time to the parse, and `ruff check --select ALL` the same way
when ruff is on PATH. Each command runs in DIR, best of --repeat. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PARSE = r"""
import ast, sys, time
from pathlib import Path
start = time.process_time()
for path in Path(".").rglob("*.py"):
    try:
        ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        pass
print(time.process_time() - start)
"""


def _run(command: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, peak resident KiB of the child). The child's own
    resource usage comes from wait4: RUSAGE_CHILDREN keeps the largest peak of all children so far."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped by wait4 above
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _best(command: list[str], cwd: Path, repeat: int) -> tuple[float, float, int]:
    runs = [_run(command, cwd) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    root = args.directory.resolve()
    if not root.is_dir():
        parser.error(f"{args.directory}: no such directory")
    files = [p for p in root.rglob("*.py") if p.is_file()]
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    parse_cpu = min(
        float(subprocess.run([sys.executable, "-c", PARSE], cwd=root, capture_output=True, text=True).stdout or "nan")
        for _ in range(args.repeat)
    )
    print(f"{root}: {len(files)} .py files, {lines} lines")
    print(f"  ast.parse            cpu {parse_cpu:7.2f} s")
    env_python = sys.executable
    command = [env_python, "-m", "accumlint", "check", ".", "--jobs", "1", "--no-cache", "--exit-zero"]
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    wall, cpu, peak = _best(command, root, args.repeat)
    print(f"  accumlint check      wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak {peak / 1024:6.0f} MiB  "
          f"{cpu / parse_cpu:5.1f}x ast.parse")
    ruff = shutil.which("ruff")
    if ruff is not None:
        wall, cpu, peak = _best([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", "."], root, args.repeat)
        print(f"  ruff --select ALL    wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak {peak / 1024:6.0f} MiB")
    else:
        print("  ruff                 not on PATH")


if __name__ == "__main__":
    main()
