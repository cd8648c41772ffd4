"""`python -m benchmarks.opennmt epochs|budget [options]` (see `benchmarks.opennmt`)."""

import sys

from benchmarks.harness import run_named
from benchmarks.opennmt import COMPARISONS
from benchmarks.opennmt import __doc__ as usage

if __name__ == "__main__":
    sys.exit(run_named("opennmt", COMPARISONS, sys.argv[1:], usage))
