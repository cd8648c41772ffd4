"""`python -m benchmarks.speed <case> [options]`: runs one speed case (see
`benchmarks.speed`); without a case, lists them."""

import importlib
import sys

from benchmarks import harness
from benchmarks.speed import cases, question


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print("usage: python -m benchmarks.speed <case> [options]   (<case> --help: its options)")
        print()
        for case in cases():
            print(f"  {case:<24} {question(case)}")
        return 0
    case, *rest = argv
    if case not in cases():
        raise SystemExit(
            f"Unknown speed case {case!r}: expected one of {', '.join(cases())} "
            "(python -m benchmarks.speed lists them)"
        )
    module = importlib.import_module(f"benchmarks.speed.{case}")
    # The case reads its own options; its help, and the command its results record, name it.
    sys.argv = [f"python -m benchmarks.speed {case}", *rest]
    harness.PROGRAM = ["-m", "benchmarks.speed", case]
    return module.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
