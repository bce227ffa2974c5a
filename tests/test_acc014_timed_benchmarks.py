"""ACC014 stays silent on a timed measurement: a function named as a test or a benchmark
(`test_speed`, `benchmark_layer`, a benchmark class's `measure_step`) that reads a clock before
its loop and after it, and reports the time (or memory) per step. The updates never being zeroed
changes nothing it measures. A training function timed the same way, or a test whose loop is not
timed, keeps the finding."""

from __future__ import annotations

import textwrap
from pathlib import Path

from accumlint import engine
from tests.snippets import findings_of
from snippets import findings, row

FUNCTION = """
import time
import torch


def {name}(layer, steps):
    optimizer = torch.optim.Adam(layer.parameters(), 1e-4)
    optimizer.zero_grad()
    x = torch.ones(4, 16)
    {before}
    for _ in range(steps):
        loss = (layer(x) ** 2).mean()
        loss.backward()
        optimizer.step()
    {after}
"""

BEFORE = "start = time.time()"
AFTER = "print('time per step', (time.time() - start) / steps)"


def _acc014(source: str) -> list[int]:
    return [line for code, line in findings(source) if code == "ACC014"]


def _function(name: str, before: str = BEFORE, after: str = AFTER) -> str:
    return textwrap.dedent(FUNCTION).replace("{name}", name).replace("{before}", before).replace("{after}", after)


def test_timed_test_or_benchmark_functions_are_measurements():
    for name in ("test_speed", "benchmark_layer", "measure_memory", "_bench"):
        assert _acc014(_function(name)) == [], name
    perf = _function("test_attention", "t0 = time.perf_counter()", "elapsed = time.perf_counter() - t0")
    assert _acc014(perf) == []


def test_a_timed_training_function_keeps_the_finding():
    source = _function("train")
    assert _acc014(source) == [row(source, "optimizer.step()")]


def test_a_test_whose_loop_is_not_timed_keeps_the_finding():
    for before, after in (("pass", "pass"), (BEFORE, "pass"), ("pass", "print(time.time())")):
        source = _function("test_training", before, after)
        assert _acc014(source) == [row(source, "optimizer.step()")], (before, after)


def test_a_benchmark_class_method():
    source = textwrap.dedent("""
        import time
        import torch


        class LayerBenchmark:
            def __init__(self, layer):
                self.layer = layer
                self.optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)

            def {name}(self, x, repeats):
                begin = time.perf_counter()
                for _ in range(repeats):
                    self.layer(x).sum().backward()
                    self.optimizer.step()
                return (time.perf_counter() - begin) / repeats
    """)
    assert _acc014(source.replace("{name}", "measure_step")) == []
    fit = source.replace("{name}", "fit")
    assert _acc014(fit) == [row(fit, "self.optimizer.step()")]


def test_a_benchmark_of_a_layer_from_another_module(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "layers.py").write_text("import torch\n\ndef make_layer():\n    return torch.nn.Linear(16, 16)\n")
    path = tmp_path / "bench_layers.py"
    path.write_text("from layers import make_layer\n" + _function("test_layer_speed").replace("(layer, steps)", "(steps)").replace(
        "    optimizer = torch.optim", "    layer = make_layer()\n    optimizer = torch.optim"))
    assert findings_of(path.read_bytes(), path=str(path), select=("ACC014",)) == []
    path.write_text(path.read_text().replace("test_layer_speed", "train_layer"))
    assert [f.code for f in engine.check_source(path.read_bytes(), str(path), select=("ACC014",)).findings] == ["ACC014"]
