"""Time accumlint against CPython's ast.parse, as whole processes, and show where the time goes.

    python benchmarks/bench_check.py [--corpus DIR] [--lines 60000] [--repeat 3] [--jobs N]
        [--project-lines 50000] [--big 200000] [--big-timeout 600] [--stage-lines 20000] [--profile]

One run prints:
  1. a corpus (--corpus DIR, copied to a temporary folder; else a deterministic synthetic one):
     `ast.parse` of every file in one process, then `accumlint check --no-cache --jobs 1`, the
     default jobs, and the warm run (cache filled by the run before);
  2. one file of a generated project whose local imports reach --project-lines lines;
  3. one generated file of --big lines (and one of half as many) with a training loop at its end;
  4. where the time goes, in process, on the corpus, the project file and a --stage-lines file
     like the big one (time counters around the engine's stages; --profile adds cProfile's top
     functions).
Each whole-process timing is the best of --repeat runs of a fresh interpreter (start-up and
imports count), wall clock and CPU time; the big files run once each and are stopped after
--big-timeout seconds. Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import cProfile
import importlib
import io
import os
import pstats
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
REPO = Path(__file__).resolve().parent.parent

PARSE = r"""
import ast, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).rglob("*.py")):
    try:
        ast.parse(path.read_bytes(), str(path))
    except (SyntaxError, ValueError):
        pass
"""

# --- the synthetic corpus --------------------------------------------------------------------

TRAIN = '''"""Training script {n}."""
import argparse
import ast
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


def module_texts(rng: random.Random, lines: int, train_share: float = 0.4):
    """Module texts (training scripts with accumulation loops, and plain modules) until `lines`."""
    written = n = 0
    while written < lines:
        if rng.random() < train_share:
            names = dict(n=n, k=rng.choice(["accum_steps", "grad_accum", "k"]), i=rng.choice(["i", "step", "idx"]),
                         x=rng.choice(["x", "inputs"]), y=rng.choice(["y", "labels"]))
            text = TRAIN.format(body=rng.choice(BODIES).format(**names), **names)
        else:
            text = PLAIN.format(n=n)
        yield n, text
        written += text.count("\n")
        n += 1


def build_corpus(target: Path, lines: int) -> None:
    for n, text in module_texts(random.Random(20260421), lines):
        path = target / f"pkg{n % 20}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# --- a project whose local imports reach many lines ------------------------------------------

HELPER = '''"""Helpers {i}: reached from train.py through the chain of imports."""
from proj.helpers import h{nxt} as nxt
from .h{nxt} import scale_{nxt}
from ..trainer.base import BaseTrainer


def scale_{i}(loss, k):
    """Divide through the next module's helper."""
    return scale_{nxt}(loss, k) if k > {i} else loss / k


def total_{i}(values):
    return nxt.total_{nxt}(values) + sum(values)


class Trainer{i}(BaseTrainer):
    def compute_loss(self, batch):
        return nxt.scale_{nxt}(super().compute_loss(batch), self.k)
'''
LAST_HELPER = '''"""The last helpers: no further import."""


def scale_{i}(loss, k):
    return loss / k


def total_{i}(values):
    return sum(values)
'''
BASE = '''"""The trainer's base class."""
import torch


class BaseTrainer:
    def __init__(self, model, optimizer, k):
        self.model, self.optimizer, self.k = model, optimizer, k

    def compute_loss(self, batch):
        inputs, labels = batch
        return torch.nn.functional.cross_entropy(self.model(inputs), labels)
'''
STEPS = '''"""Micro-steps: the backward lives here."""
from proj.helpers.h0 import scale_0
from .base import BaseTrainer


class StepTrainer(BaseTrainer):
    def micro_step(self, batch):
        loss = scale_0(self.compute_loss(batch), self.k)
        loss.backward()
        return loss.detach()
'''
LOOP = '''"""The trainer, spread over base.py, steps.py and this module."""
from . import steps


class Trainer(steps.StepTrainer):
    def fit(self, loader):
        for i, batch in enumerate(loader):
            self.micro_step(batch)
            if (i + 1) % self.k == 0 or i + 1 == len(loader):
                self.optimizer.step()
                self.optimizer.zero_grad()
'''
SCRIPT = '''"""The one checked file."""
import torch
from proj import Trainer
from proj.helpers.h0 import scale_0, total_0
import proj.helpers.h1 as second


def main(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = Trainer(model, optimizer, accum_steps)
    trainer.fit(loader)
    losses = []
    for i, batch in enumerate(loader):
        loss = scale_0(trainer.compute_loss(batch), accum_steps)
        loss = second.scale_1(loss, 1)
        loss.backward()
        losses.append(loss.item())
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
    return total_0(losses)
'''


def build_project(root: Path, lines: int, modules: int = 100) -> Path:
    """A package whose modules import one another (absolute and relative), with filler code so
    that what train.py reaches adds up to `lines`; returns train.py."""
    helpers = root / "proj" / "helpers"
    helpers.mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (root / "proj" / "__init__.py").write_text("from .trainer import Trainer\n")
    (root / "proj" / "trainer").mkdir()
    for name, text in {"__init__": "from .loop import Trainer\n", "base": BASE, "steps": STEPS, "loop": LOOP}.items():
        (root / "proj" / "trainer" / f"{name}.py").write_text(text)
    (helpers / "__init__.py").write_text("")
    fixed = sum(p.read_text().count("\n") for p in root.rglob("*.py")) + SCRIPT.count("\n")
    filler = module_texts(random.Random(7), 10**12, train_share=0.2)  # endless
    per_module = (lines - fixed) // modules
    for i in range(modules):
        head = HELPER.format(i=i, nxt=i + 1) if i < modules - 1 else LAST_HELPER.format(i=i)
        parts, count = [head], head.count("\n")
        while count < per_module:
            _, text = next(filler)
            text = text.split('"""\n', 2)[-1]  # without the module docstring
            parts.append(text)
            count += text.count("\n")
        (helpers / f"h{i}.py").write_text("\n".join(parts))
    (root / "train.py").write_text(SCRIPT)
    return root / "train.py"


# --- one big file ----------------------------------------------------------------------------

BIG_LOOP = '''

def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()  # the known bug (ACC001): not divided by accum_steps
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
'''


def big_file(path: Path, lines: int) -> Path:
    """`lines` lines of the synthetic corpus's modules (one in ten a training script) in one
    file, then a buggy training loop."""
    texts = [text.split('"""\n', 1)[-1] for _, text in module_texts(random.Random(11), lines, 0.1)]
    path.write_text("".join(texts) + BIG_LOOP)
    return path


# --- timing ----------------------------------------------------------------------------------


def best_of(command: list[str], repeat: int, cwd: Path, before=None, timeout=None) -> tuple[float, float]:
    """(wall, cpu) seconds, each the best of `repeat` runs; cpu is user + system time of the
    process and the workers it waited for, steadier than wall time on a loaded machine.
    A run past `timeout` seconds is killed and counts as infinitely long."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        if before:
            before()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, timeout=timeout)
        except subprocess.TimeoutExpired:
            return float("inf"), float("inf")
        wall = min(wall, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime)
        if done.returncode not in (0, 1):  # 1: findings, which these inputs have on purpose
            sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, cpu


def accumlint(*args: str) -> list[str]:
    return [PYTHON, "-m", "accumlint", "check", *args]


def lines_of(paths) -> int:
    return sum(p.read_bytes().count(b"\n") for p in paths)


# --- where the time goes, in process ---------------------------------------------------------

# (label, module, attribute path): each is wrapped with a timer while accumlint runs in process.
# Indented labels are parts of the row above. A name that the code no longer has shows "n/a".
# The work inside fix verification (it parses, analyses and runs the rules again on each fixed
# text) counts in its own row only.
STAGES = [
    ("discover files", "accumlint.discovery", "discover"),
    ("read files", "accumlint.runner", "read_source"),
    ("engine.check_source, per file", "accumlint.engine", "check_source"),
    ("  ast.parse", "accumlint.engine", "parse"),
    ("  analyse (facts)", "accumlint.engine", "analyse"),
    ("    collect (scopes, defs, loops)", "accumlint.analysis.facts", "collect"),
    ("    events (calls classified)", "accumlint.analysis.events", "scope_events"),
    ("    windows (gates, k)", "accumlint.analysis.windows", "find_windows"),
    ("    local modules analysed", "accumlint.analysis.calls", "analysed"),
    ("      of which read and parsed", "accumlint.project", "ProjectIndex.module"),
    ("  rules", "accumlint.engine", "_violations"),
    ("  fix verification (each fix re-checked)", "accumlint.engine", "_Analysis._verify_fixes"),
    ("report (text)", "accumlint.reporting", "FORMATS.text"),
]


@contextlib.contextmanager
def stage_timers():
    """Wrap each stage with a timer (outermost calls only); yields {label: [seconds, calls]}."""
    spent: dict[str, list] = {}
    undo = []
    verifying = [0]
    for label, module_name, path in STAGES:
        try:
            owner = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for part in parents:
                owner = owner[part] if isinstance(owner, dict) else getattr(owner, part)
            original = owner[name] if isinstance(owner, dict) else getattr(owner, name)
        except (ImportError, AttributeError, KeyError):
            continue
        spent[label] = [0.0, 0]

        def timed(*args, _original=original, _slot=spent[label], _depth=[0], _verify="verification" in label,
                  **kwargs):
            if _depth[0] or (verifying[0] and not _verify):
                return _original(*args, **kwargs)
            _depth[0] += 1
            verifying[0] += _verify
            start = time.process_time()
            try:
                return _original(*args, **kwargs)
            finally:
                _slot[0] += time.process_time() - start
                _slot[1] += 1
                _depth[0] -= 1
                verifying[0] -= _verify

        if isinstance(owner, dict):
            owner[name] = timed
            undo.append(lambda o=owner, n=name, f=original: o.__setitem__(n, f))
        else:
            setattr(owner, name, timed)
            undo.append(lambda o=owner, n=name, f=original: setattr(o, n, f))
    try:
        yield spent
    finally:
        for restore in reversed(undo):
            restore()


def run_in_process(args: list[str], cwd: Path, profile: bool = False):
    """`accumlint check ARGS` in this process: (total seconds, stage timers, profile or None)."""
    from accumlint.cli import cli

    profiler = cProfile.Profile() if profile else None
    here = Path.cwd()
    os.chdir(cwd)
    try:
        with stage_timers() as spent, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            start = time.process_time()
            if profiler:
                profiler.enable()
            try:
                cli.main(["check", *args], prog_name="accumlint", standalone_mode=False)
            except SystemExit:
                pass
            finally:
                if profiler:
                    profiler.disable()
            total = time.process_time() - start
    finally:
        os.chdir(here)
    return total, spent, profiler


def print_stages(columns: dict[str, tuple[float, dict]]) -> None:
    names = list(columns)
    print("\nwhere the time goes, in process (check --no-cache --jobs 1), cpu seconds")
    print(f"{'stage':40}" + "".join(f"{n:>16}" for n in names))
    for label, _, _ in STAGES:
        cells = [columns[n][1].get(label) for n in names]
        print(f"{label:40}" + "".join(f"{c[0]:16.3f}" if c else f"{'n/a':>16}" for c in cells))
    print(f"{'total (imports excluded)':40}" + "".join(f"{columns[n][0]:16.3f}" for n in names))


def print_profile(profiler: cProfile.Profile, title: str, top: int = 12) -> None:
    stats = pstats.Stats(profiler).stats  # (file, line, function) -> (calls, _, own, cumulative, _)
    total = sum(own for _, _, own, _, _ in stats.values())
    print(f"\ntop functions by own time, {title} (cProfile; total {total:.2f} s under the profiler)")
    print(f"{'function':60} {'calls':>9} {'own s':>7} {'share':>6} {'cum s':>7}")
    for (path, line, func), (_, calls, own, cumulative, _) in sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]:
        where = f"{Path(path).parent.name}/{Path(path).name}:{line}({func})" if line else func
        print(f"{where[-60:]:60} {calls:9d} {own:7.3f} {own / total:6.1%} {cumulative:7.3f}")


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="a folder of Python files (copied first)")
    parser.add_argument("--lines", type=int, default=60_000, help="size of the synthetic corpus")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--project-lines", type=int, default=50_000)
    parser.add_argument("--big", type=int, default=200_000, help="lines of the big file (0: skip)")
    parser.add_argument("--big-timeout", type=int, default=600, help="seconds before a big-file run is killed")
    parser.add_argument("--stage-lines", type=int, default=20_000, help="lines of the big file run in process")
    parser.add_argument("--profile", action="store_true", help="also print cProfile's top functions")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="accumlint-bench-"))
    try:
        corpus = work / "corpus"
        if args.corpus:
            shutil.copytree(args.corpus, corpus, ignore=shutil.ignore_patterns(".accumlint_cache", ".git"))
        else:
            build_corpus(corpus, args.lines)
        (corpus / "pyproject.toml").touch()  # the project root, where the cache goes
        files = sorted(corpus.rglob("*.py"))
        total = lines_of(files)
        repeat = args.repeat
        print(f"corpus: {len(files)} files, {total} lines ({args.corpus or 'synthetic'}); "
              f"best of {repeat}; {os.cpu_count()} cores; Python {sys.version.split()[0]}")

        parse = best_of([PYTHON, "-c", PARSE, str(corpus)], repeat, corpus)
        print(f"\n{'run':44} {'wall s':>7} {'cpu s':>7} {'lines/s':>8} {'x ast.parse':>12} {'(cpu)':>6}")

        def row(name: str, seconds: tuple[float, float], lines: int = 0, workers: bool = False) -> None:
            # With workers, the cpu time would miss theirs (the forkserver reaps them): wall only.
            (wall, cpu), rate, ratio = seconds, "", ""
            if lines:
                rate, ratio = f"{lines / wall:8.0f}", f"{wall / parse[0]:11.1f}x " + (
                    "     -" if workers else f"{cpu / parse[1]:5.1f}x")
            print(f"{name:44} {wall:7.3f} {'-' if workers else f'{cpu:.3f}':>7} {rate:>8} {ratio:>19}", flush=True)

        row("ast.parse of every file, 1 process", parse, total)
        row("python -m accumlint --version (start-up)", best_of([PYTHON, "-m", "accumlint", "--version"], repeat, corpus))
        row("accumlint cold, --no-cache --jobs 1", best_of(accumlint("--no-cache", "--jobs", "1", "."), repeat, corpus), total)
        row(f"accumlint cold, --no-cache --jobs {args.jobs}",
            best_of(accumlint("--no-cache", "--jobs", str(args.jobs), "."), repeat, corpus), total, args.jobs > 1)
        cache = corpus / ".accumlint_cache"
        row(f"accumlint filling an empty cache, --jobs {args.jobs}",
            best_of(accumlint("."), repeat, corpus, lambda: shutil.rmtree(cache, ignore_errors=True)), total,
            args.jobs > 1)
        row(f"accumlint warm (every file cached), --jobs {args.jobs}", best_of(accumlint("."), repeat, corpus), total)

        project = work / "project"
        script = build_project(project, args.project_lines)
        reached = lines_of(project.rglob("*.py"))
        row(f"one file of a project ({reached} lines)",
            best_of(accumlint("--no-cache", str(script.relative_to(project))), repeat, project))

        if args.big:
            print(f"\n{'one big file (loop at its end), run once':44} {'wall s':>7} {'cpu s':>7} {'lines/s':>8} "
                  f"{'ast.parse s':>12} {'growth (cpu)':>13}")
            first = None
            for size in (args.big // 2, args.big):
                path = big_file(work / f"big{size}.py", size)
                start = time.process_time()
                ast.parse(path.read_bytes())
                parse_big = time.process_time() - start
                wall, cpu = best_of(accumlint("--no-cache", path.name), 1, work, timeout=args.big_timeout)
                if cpu == float("inf"):
                    print(f"{f'{size} lines':44} stopped after {args.big_timeout} s; ast.parse {parse_big:.3f} s")
                    break
                growth = f"{cpu / first:12.2f}x" if first else ""
                first = first or cpu
                print(f"{f'{size} lines':44} {wall:7.3f} {cpu:7.3f} {size / cpu:8.0f} {parse_big:12.3f} {growth:>13}",
                      flush=True)
            print("(twice the lines: a growth of 2x is linear)")

        # Where the time goes: the corpus, the project file and the smaller big file, in process.
        columns = {}
        total_s, spent, profiler = run_in_process(["--no-cache", "--jobs", "1", "."], corpus, args.profile)
        columns["corpus"] = (total_s, spent)
        columns["project file"] = run_in_process(["--no-cache", "--jobs", "1", "train.py"], project)[:2]
        if args.stage_lines:
            name = big_file(work / "stages.py", args.stage_lines).name
            columns[f"{args.stage_lines}-line file"] = run_in_process(["--no-cache", "--jobs", "1", name], work)[:2]
        print_stages(columns)
        if profiler:
            print_profile(profiler, "corpus")
        if args.stage_lines and args.profile:
            profiler = run_in_process(["--no-cache", "--jobs", "1", "stages.py"], work, True)[2]
            print_profile(profiler, f"{args.stage_lines}-line file")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
