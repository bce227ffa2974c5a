"""Time accumlint against bare LibCST parsing, as whole processes, on one corpus.

    python benchmarks/bench_check.py [--corpus DIR] [--lines 60000] [--repeat 3] [--jobs N]

Without --corpus it writes a deterministic synthetic corpus (training scripts with the usual
accumulation loops, and plain modules) to a temporary directory. Every timing is the best of
--repeat runs of a fresh interpreter, wall clock, so imports and process start-up count.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
REPO = Path(__file__).resolve().parent.parent



PARSE = r"""
import sys
from pathlib import Path
import libcst
for path in sorted(Path(sys.argv[1]).rglob("*.py")):
    try:
        libcst.parse_module(path.read_bytes())
    except Exception:
        pass
"""

TRAIN = '''"""Training script {n}."""
import argparse
import torch
from torch.utils.data import DataLoader


def build(args):
    model = Net{n}(args.hidden)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    return model, optimizer, scheduler


def train_epoch(model, loader, optimizer, scheduler, {k}, scaler=None):
    model.train()
    running = 0.0
    for {i}, ({x}, {y}) in enumerate(loader):
        output = model({x})
        loss = torch.nn.functional.cross_entropy(output, {y})
{body}
    return running / len(loader)


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(-1) == y).sum().item()
    return correct / len(loader.dataset)
'''

BODIES = [
    "        loss.backward()\n        running += loss.item()\n"
    "        if ({i} + 1) % {k} == 0:\n            optimizer.step()\n            optimizer.zero_grad()\n",
    "        (loss / {k}).backward()\n        running += loss.detach()\n"
    "        if ({i} + 1) % {k} == 0 or {i} + 1 == len(loader):\n            optimizer.step()\n"
    "            scheduler.step()\n            optimizer.zero_grad()\n",
    "        scaler.scale(loss / {k}).backward()\n        running += loss\n"
    "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    "        if {i} % {k} == {k} - 1:\n            scaler.step(optimizer)\n            scaler.update()\n"
    "            optimizer.zero_grad()\n",
]

PLAIN = '''"""Utility module {n}."""
import os
import re
from dataclasses import dataclass


@dataclass
class Record{n}:
    name: str
    size: int = 0

    def describe(self) -> str:
        return f"{{self.name}} ({{self.size}} bytes)"


def parse_line_{n}(line: str) -> Record{n}:
    name, _, size = line.partition(",")
    return Record{n}(name.strip(), int(size or 0))


def scan_{n}(directory: str) -> list:
    found = []
    for entry in sorted(os.listdir(directory)):
        if re.match(r"[a-z]+_[0-9]+", entry):
            found.append(entry)
        elif entry.endswith(".tmp"):
            continue
    return found
'''


def build_corpus(target: Path, lines: int) -> None:
    rng = random.Random(20260421)
    written = n = 0
    while written < lines:
        if rng.random() < 0.4:
            names = dict(n=n, k=rng.choice(["accum_steps", "grad_accum", "k"]),
                         i=rng.choice(["i", "step", "idx"]), x=rng.choice(["x", "inputs"]),
                         y=rng.choice(["y", "labels"]))
            body = rng.choice(BODIES).format(**names)
            text = TRAIN.format(body=body, **names)
        else:
            text = PLAIN.format(n=n)
        path = target / f"pkg{n % 20}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written += text.count("\n")
        n += 1


def best_of(command: list[str], repeat: int, before=None, cwd=REPO) -> float:
    best = float("inf")
    for _ in range(repeat):
        if before:
            before()
        start = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        best = min(best, time.perf_counter() - start)
        if done.returncode not in (0, 1):  # 1 means findings, which the corpus has on purpose
            raise SystemExit(f"{' '.join(command)} failed with exit status {done.returncode}")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--lines", type=int, default=60_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="accumlint-bench-"))
    try:
        corpus = workdir / "corpus"
        if args.corpus:
            shutil.copytree(args.corpus, corpus, ignore=shutil.ignore_patterns(".accumlint_cache"))
        else:
            build_corpus(corpus, args.lines)
        files = sorted(corpus.rglob("*.py"))
        total = sum(path.read_bytes().count(b"\n") for path in files)
        single = str(max(files, key=lambda p: p.stat().st_size))
        cache_dir = corpus / ".accumlint_cache"

        def drop_cache():
            shutil.rmtree(cache_dir, ignore_errors=True)

        check = [PYTHON, "-m", "accumlint", "check", "--jobs", str(args.jobs), "."]
        cold = [PYTHON, "-m", "accumlint", "check", "--no-cache"]
        timings = {
            "python -c 'import libcst'": best_of([PYTHON, "-c", "import libcst"], args.repeat),
            "libcst parse_module, 1 process": best_of([PYTHON, "-c", PARSE, str(corpus)], args.repeat),
            f"accumlint cold, no cache, jobs={args.jobs}": best_of(
                cold + ["--jobs", str(args.jobs), "."], args.repeat, cwd=corpus),
            "accumlint cold, no cache, jobs=1": best_of(cold + ["--jobs", "1", "."], args.repeat, cwd=corpus),
            f"accumlint cache filled, jobs={args.jobs}": best_of(check, args.repeat, drop_cache, cwd=corpus),
        }
        best_of(check, 1, cwd=corpus)  # fill the cache
        timings[f"accumlint warm (all cached), jobs={args.jobs}"] = best_of(check, args.repeat, cwd=corpus)
        timings["accumlint single file, no cache"] = best_of(cold + [single], args.repeat, cwd=corpus)

        parse = timings["libcst parse_module, 1 process"]
        print(f"corpus: {len(files)} files, {total} lines ({'given' if args.corpus else 'synthetic'}); "
              f"best of {args.repeat}; {os.cpu_count()} cores")
        print(f"{'run':48} {'seconds':>8} {'lines/s':>10} {'vs parse':>9}")
        for name, seconds in timings.items():
            rate = "" if "single" in name or "import" in name else f"{total / seconds:10.0f}"
            print(f"{name:48} {seconds:8.3f} {rate:>10} {parse / seconds:8.2f}x")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
