"""keras-luong's benchmarks: the speed cases (`benchmarks.speed`: `python -m
benchmarks.speed` lists them), the studies and results the pages quote, and the tools that
compare two checkouts. Run each from the repository's root as `python -m benchmarks.<name>`
(its docstring says what it measures and how); `benchmarks.harness` holds what they share."""
