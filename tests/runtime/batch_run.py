"""Run several scripts through `accumlint run`'s own runner in one interpreter, so a test pays
the torch import once per batch instead of once per script. Prints one JSON object:
{script: {"status": int, "findings": [...], "stdout": str}}."""

import contextlib
import io
import json
import os
import sys
import tempfile

from accumlint.runtime.runner import RunConfig, run


def main(scripts):
    results = {}
    for script in scripts:
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.json")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = run(RunConfig(script, [], report_path=report))
            with open(report) as handle:
                findings = json.load(handle)
        results[script] = {"status": status, "findings": findings, "stdout": out.getvalue()}
    sys.__stdout__.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
