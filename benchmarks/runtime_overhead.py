"""Overhead of `accumlint run` on real training steps: the same training function run with the
checker off and on, alternating in one process (one thread), median of the per-pair ratios.

    python benchmarks/runtime_overhead.py [--repeats 5] [--steps 40]

Times are the process's CPU time (time.process_time): with one thread it is the work done, and
other processes on a shared machine disturb it far less than wall-clock time.

Modes: "always-on" is the host-side accounting alone (--sample-steps 0); "default" is what
`accumlint run` does with no option (probe and graph walks over the first 20 optimizer steps,
then a frame scan every 50), over the whole run; "sampled step" has the probe and graph walks on
every step, the cost of one of those first 20 steps.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, Optional

import torch
import torch.nn as nn

from accumlint.runtime.monitor import Monitor, Options
from accumlint.runtime.patches import Installation


class LM(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, seq: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(tokens) + self.pos))


def make_lm_trainer(vocab: int, d: int, layers: int) -> Callable[[int], None]:
    def train(steps: int, accum: int = 4) -> None:
        torch.manual_seed(0)
        model = LM(vocab, d, layers)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        data = torch.randint(vocab, (steps * accum, 8, 65))
        for i, chunk in enumerate(data):
            logits = model(chunk[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), chunk[:, 1:].reshape(-1))
            (loss / accum).backward()
            if (i + 1) % accum == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
    return train


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


def timed(fn: Callable[[int], None], steps: int, sample_steps: Optional[int] = None) -> float:
    installation = None
    if sample_steps is not None:
        installation = Installation(Monitor(Options(sample_steps=sample_steps))).install()
    start = time.process_time()
    try:
        fn(steps)
    finally:
        if installation is not None:
            installation.uninstall()
    return time.process_time() - start


def measure(fn: Callable[[int], None], steps: int, repeats: int,
            sample_steps: int) -> tuple[float, float, list[float]]:
    timed(fn, 2)  # warm-up
    ratios, bases = [], []
    for _ in range(repeats):
        base = timed(fn, steps)
        checked = timed(fn, steps, sample_steps)
        bases.append(base)
        ratios.append(checked / base - 1)
    return statistics.median(bases), statistics.median(ratios), sorted(ratios)


WORKLOADS = {
    "transformer": ("transformer 5.3M params d256 4 layers seq64 bs8",
                    make_lm_trainer(4096, 256, 4)),
    "tinylm": ("TinyLM 0.5M params d128 2 layers seq64 bs8", make_lm_trainer(256, 128, 2)),
    "mlp": ("tiny MLP 16-32-5 bs10 (worst case)", train_mlp),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--workloads", default="transformer,tinylm,mlp")
    parser.add_argument("--modes", default="always-on,default,sampled step")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, CPU time, {args.repeats} alternating repeats, "
          f"{args.steps} optimizer steps x 4 micro-batches")
    print(f"{'workload':48} {'mode':13} {'base s':>7} {'overhead':>9}  sorted ratios")
    for key in args.workloads.split(","):
        name, fn = WORKLOADS[key]
        modes = {"always-on": 0, "default": 20, "sampled step": args.steps}
        for mode in args.modes.split(","):
            sample = modes[mode]
            base, ratio, ratios = measure(fn, args.steps, args.repeats, sample)
            shown = ", ".join(f"{100 * r:+.1f}" for r in ratios)
            print(f"{name:48} {mode:13} {base:7.2f} {100 * ratio:+8.1f}%  [{shown}]", flush=True)


if __name__ == "__main__":
    main()
