"""Overhead of `accumlint run` on real training steps: the same training function timed with the
checker off and on, alternating in one process (one thread), median of the per-pair ratios.

    python benchmarks/runtime_overhead.py [--repeats 5] [--steps 60]

"always-on" is the host-side accounting alone (--sample-steps 0); "default" adds the probe and
graph walks over the first 20 optimizer steps, as `accumlint run` does by default.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn

from accumlint.runtime.monitor import Monitor, Options
from accumlint.runtime.patches import Installation


class TinyLM(nn.Module):
    def __init__(self, vocab=256, d=128, layers=2, seq=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens) + self.pos))


def train_lm(steps: int, accum: int = 4) -> None:
    torch.manual_seed(0)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.randint(256, (steps * accum, 8, 65))
    for i, chunk in enumerate(data):
        logits = model(chunk[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256), chunk[:, 1:].reshape(-1))
        (loss / accum).backward()
        if (i + 1) % accum == 0:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()


def train_mlp(steps: int, accum: int = 4) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(steps * accum):
        x, y = torch.randn(10, 16), torch.randint(5, (10,))
        (nn.functional.cross_entropy(model(x), y) / accum).backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()


def timed(fn, steps, sample_steps=None) -> float:
    installation = None
    if sample_steps is not None:
        installation = Installation(Monitor(Options(sample_steps=sample_steps))).install()
    start = time.perf_counter()
    try:
        fn(steps)
    finally:
        if installation is not None:
            installation.uninstall()
    return time.perf_counter() - start


def measure(fn, steps, repeats, sample_steps) -> tuple[float, float, list[float]]:
    timed(fn, 2)  # warm-up
    ratios, bases = [], []
    for _ in range(repeats):
        base = timed(fn, steps)
        checked = timed(fn, steps, sample_steps)
        bases.append(base)
        ratios.append(checked / base - 1)
    return statistics.median(bases), statistics.median(ratios), sorted(ratios)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, {args.repeats} alternating repeats, "
          f"{args.steps} optimizer steps x 4 micro-batches")
    print(f"{'workload':34} {'mode':10} {'base s':>7} {'overhead':>9}  sorted ratios")
    for name, fn in (("TinyLM d128 2 layers seq64 bs8", train_lm),
                     ("tiny MLP 16-32-5 bs10 (worst)", train_mlp)):
        for mode, sample in (("always-on", 0), ("default", 20)):
            base, ratio, ratios = measure(fn, args.steps, args.repeats, sample)
            shown = ", ".join(f"{100 * r:+.1f}" for r in ratios)
            print(f"{name:34} {mode:10} {base:7.2f} {100 * ratio:+8.1f}%  [{shown}]")


if __name__ == "__main__":
    main()
