"""The speed cases: each module answers one question about keras-luong's speed with figures
taken in one run (most as ratios of interleaved timings, `benchmarks.harness`).

    python -m benchmarks.speed                         # the cases, each with its question
    python -m benchmarks.speed <case> --help           # a case's options
    KERAS_BACKEND=jax python -m benchmarks.speed <case> [options]
    KERAS_BACKEND=jax python -m benchmarks.speed <case> [options] --processes 3 --json FILE

`--processes N` runs a case that writes a results file of named figures N times, each in a
fresh process, and writes each figure's median over them with its range (`<key>_low`,
`<key>_high`): for ratios that move between processes by more than between rounds.

A case's docstring says what it measures, on which backends, and which page quotes it.
"""

import ast
import pkgutil
from pathlib import Path

FOLDER = Path(__file__).parent


def cases():
    """The case names, sorted: every module of this package."""
    return sorted(m.name for m in pkgutil.iter_modules([str(FOLDER)]) if m.name != "__main__")


def question(case):
    """The first sentence of a case's docstring (read from its file, without importing it)."""
    text = ast.get_docstring(ast.parse((FOLDER / f"{case}.py").read_text(encoding="utf-8")))
    first = " ".join(text.split("\n\n")[0].split())
    return first.split("? ")[0] + "?" if "? " in first else first.split(". ")[0].rstrip(".:")
