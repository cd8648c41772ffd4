"""The same timings on two checkouts of keras-luong in one process, interleaved: is a change
speed-neutral?

    git worktree add /tmp/baseline <commit>
    KERAS_BACKEND=jax .venv/bin/python benchmarks/compare_checkouts.py --baseline /tmp/baseline

The baseline's `keras_luong` is copied into a temporary folder as `keras_luong_baseline` (its
imports renamed), so both versions load side by side and share one process, one set of
compiled kernels and one stretch of the machine's noise (separate processes on a shared
machine differed by up to 35% between two runs of the same checkout). Each version builds
`LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128)` (input feeding, global general
attention) from the same seed and times, in alternating order: a train step (B=64,
S=T=30, with padding), greedy `generate` and beam-4 `generate` (B=64, 20 steps). It prints
the median of every call and the ratio this checkout / baseline (1.00: the same speed).
On torch, `OMP_NUM_THREADS=1` keeps another process on the machine from skewing the ratios.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np

CASES = ("train step", "greedy", "beam 4")


def load_baseline(checkout, folder):
    """The baseline's package, imported as `keras_luong_baseline` from a renamed copy."""
    target = os.path.join(folder, "keras_luong_baseline")
    shutil.copytree(os.path.join(checkout, "keras_luong"), target)
    for root, _, files in os.walk(target):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                with open(path, "w", encoding="utf-8") as f:
                    f.write(re.sub(r"\bkeras_luong\b", "keras_luong_baseline", text))
    sys.path.insert(0, folder)
    import keras_luong_baseline

    return keras_luong_baseline


def runs_of(package, data):
    """The timed calls of one version's model."""
    import keras

    source, target = data
    keras.utils.set_random_seed(0)
    model = package.LuongSeq2Seq(1000, 1000, units=256, embedding_dim=128)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
        jit_compile=keras.backend.backend() != "torch",
    )
    beam = package.BeamSearchSampler(4, length_penalty=0.0)  # the same in every version
    return {
        "train step": lambda: model.train_on_batch((source, target[:, :-1]), target[:, 1:]),
        "greedy": lambda: model.generate(source, 20),
        "beam 4": lambda: model.generate(source, 20, sampler=beam),
    }


def batch_data(vocabulary=1000, batch=64, length=30):
    """Random source and target ids `(batch, length)` and `(batch, length + 1)`, each row
    padded after a random length of at least half."""
    rng = np.random.default_rng(0)
    source = rng.integers(3, vocabulary, (batch, length)).astype("int32")
    target = rng.integers(3, vocabulary, (batch, length + 1)).astype("int32")
    padding = np.arange(length)[None] >= rng.integers(length // 2, length + 1, batch)[:, None]
    source[padding] = 0
    target[:, 1:][padding] = 0
    return source, target


def train_step_arguments(doc, parser=None):
    """The options of a benchmark that times the recipe's training step two ways in one run:
    `--rounds`, `--calls` and `--vocabulary` (both sides), added to `parser` if given."""
    parser = parser or argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--vocabulary", type=int, default=8000)
    return parser.parse_args()


def recipe_model(vocabulary, seed=0):
    """The translation recipe's model at `vocabulary` subwords a side, compiled by it
    (`keras_luong.models.recipe`), seeded."""
    import keras

    from keras_luong.models.recipe import recipe_model as build

    keras.utils.set_random_seed(seed)
    return build(vocabulary, vocabulary)


def recipe_train_step(vocabulary, batch, length):
    """A function of no arguments that trains `recipe_model(vocabulary)` on one batch of
    `batch_data(vocabulary, batch, length)`."""
    model = recipe_model(vocabulary)
    source, target = batch_data(vocabulary, batch, length)

    def step():
        model.train_on_batch((source, target[:, :-1]), target[:, 1:])

    return step


def interleaved_medians(versions, cases, rounds, calls):
    """`{(version, case): median seconds}` of every version's calls, compiled first, then
    timed in rounds whose order of versions alternates."""
    times = {(version, case): [] for version in versions for case in cases}
    for runs in versions.values():
        for case in cases:
            runs[case]()  # compiles
    for round_ in range(rounds):
        order = list(versions) if round_ % 2 == 0 else list(versions)[::-1]
        for case in cases:
            for version in order:
                for _ in range(calls):
                    start = time.perf_counter()
                    versions[version][case]()
                    times[(version, case)].append(time.perf_counter() - start)
    return {key: float(np.median(value)) for key, value in times.items()}


def print_ratios(medians, cases, this, other, rounds, calls):
    import keras

    print(f"backend {keras.backend.backend()}, {rounds} rounds of {calls} calls, medians")
    print(f"{'case':<12} {this + ' ms':>14} {other + ' ms':>14} {'ratio':>7}")
    for case in cases:
        a, b = medians[(this, case)] * 1e3, medians[(other, case)] * 1e3
        print(f"{case:<12} {a:14.1f} {b:14.1f} {a / b:7.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the other checkout's root folder")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3, help="calls per version and round")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    args = parser.parse_args()
    import keras_luong

    data = batch_data()
    with tempfile.TemporaryDirectory() as folder:
        versions = {
            "this": runs_of(keras_luong, data),
            "baseline": runs_of(load_baseline(args.baseline, folder), data),
        }
        medians = interleaved_medians(versions, args.cases, args.rounds, args.calls)
    print_ratios(medians, args.cases, "this", "baseline", args.rounds, args.calls)


if __name__ == "__main__":
    main()
