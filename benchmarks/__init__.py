"""keras-luong's benchmarks: scripts that print ratios taken in one run, and the studies the
pages quote. Run each from the repository's root as `python -m benchmarks.<name>` (its
docstring says what it measures and how); `benchmarks.harness` holds what they share."""
