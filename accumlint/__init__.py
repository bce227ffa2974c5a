"""accumlint: find and fix gradient-accumulation bugs in PyTorch training loops."""

__version__ = "0.1.0"
