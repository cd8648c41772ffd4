"""`python -m benchmarks.opennmt epochs|budget [options]` (see `benchmarks.opennmt`)."""

import importlib
import sys

from benchmarks import harness
from benchmarks.opennmt import COMPARISONS
from benchmarks.opennmt import __doc__ as usage


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(usage)
        return 0
    comparison, *rest = argv
    if comparison not in COMPARISONS:
        raise SystemExit(
            f"Unknown comparison {comparison!r}: expected one of {', '.join(COMPARISONS)}"
        )
    module = importlib.import_module(f"benchmarks.opennmt.{comparison}")
    sys.argv = [f"python -m benchmarks.opennmt {comparison}", *rest]
    harness.PROGRAM = ["-m", "benchmarks.opennmt", comparison]
    return module.main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
