"""`python -m accumlint.run [options] script.py [args...]` (or `-m module`), also as
`torchrun -m accumlint.run`."""

from accumlint.runtime.cli import run_command

if __name__ == "__main__":
    run_command(prog_name="accumlint run")
