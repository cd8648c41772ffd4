"""`python -m benchmarks.speed <case> [options]`: runs one speed case (see
`benchmarks.speed`); without a case, lists them."""

import sys

from benchmarks.harness import run_named
from benchmarks.speed import cases, question


def listing():
    rows = [f"  {case:<24} {question(case)}" for case in cases()]
    usage = "usage: python -m benchmarks.speed <case> [options]   (<case> --help: its options)"
    return "\n".join([usage, "", *rows])


if __name__ == "__main__":
    sys.exit(run_named("speed", cases(), sys.argv[1:], listing()))
