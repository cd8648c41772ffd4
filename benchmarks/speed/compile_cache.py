"""What JAX's persistent compilation cache saves in the recipe's first epoch.

    KERAS_BACKEND=jax python -m benchmarks.speed compile_cache --data ../shared/data/multi30k-en-de

`BucketedBatches` gives each length bucket one batch shape, and JAX compiles the train step
(and the validation step) once per shape, in the first epoch. With JAX's persistent cache
(`jax.config.update("jax_compilation_cache_dir", folder)`), a later process that trains the
same model on the same shapes reads the compiled steps from the folder instead.

The script trains the translation page's recipe (its model, `SequenceLoss`, `Adam` with
global clipping; no callbacks) for two epochs on the first `--train-pairs` pairs of the seed
study's long corpus, with the validation loss on `--valid-pairs` pairs, in three processes
run one after the other: without the cache, then twice with one new cache folder (the first
fills it, the second reads it). It prints each process's epoch times; the first epoch's
excess over the second is the compiling. `--json FILE` writes them to the results file the
pages quote (`no_cache_first`, `no_cache_compiling`, `cached_first`, `cached_compiling`,
`shapes`, `pairs`). Run nothing else beside it.
"""

import argparse
import json
import os
import sys
import tempfile
import time

from benchmarks import harness
from benchmarks.harness import worker_result

# Each process's figures' names in the results file.
NAMES = {
    "no cache": "no_cache",
    "cache, first process (fills it)": "filling",
    "cache, second process (reads it)": "cached",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the Multi30k files (default: download)")
    parser.add_argument("--train-pairs", type=int, default=1500)
    parser.add_argument("--valid-pairs", type=int, default=300)
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def worker(args):
    """Two epochs of the recipe; the seconds of each, as JSON on the last line."""
    import keras

    if keras.backend.backend() != "jax":
        raise SystemExit("the persistent cache is JAX's: run with KERAS_BACKEND=jax")
    import jax

    from benchmarks.harness import bucketed, corpus, recipe_model
    from keras_luong import SubwordVocabulary

    cache = os.environ.get("COMPILE_CACHE_FOLDER")
    if cache:
        jax.config.update("jax_compilation_cache_dir", cache)
        # Keep every compiled step, however quick or small.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    with open(args.worker, "rb") as f:
        subwords = SubwordVocabulary(f.read())
    (sources, targets), (valid_sources, valid_targets) = corpus(
        args.data, "long", args.train_pairs, args.valid_pairs
    )
    model = recipe_model(subwords, seed=0)
    train = bucketed(subwords, sources, targets, shuffle=True, seed=0)
    valid = bucketed(subwords, valid_sources, valid_targets, shuffle=False, seed=0)
    seconds = []

    class Clock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    model.fit(train, validation_data=valid, epochs=2, callbacks=[Clock()], verbose=0)
    print(json.dumps({"epochs": seconds, "shapes": len(train.buckets) + len(valid.buckets)}))


def run(args, vocabulary_path, cache):
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # the worker sets its own, or none
    if cache:
        env["COMPILE_CACHE_FOLDER"] = cache
    command = [sys.executable, "-m", __spec__.name, "--worker", vocabulary_path]
    command += ["--train-pairs", str(args.train_pairs), "--valid-pairs", str(args.valid_pairs)]
    if args.data:
        command += ["--data", args.data]
    return worker_result(command, env, "the worker")


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    from benchmarks.harness import corpus
    from keras_luong import SubwordVocabulary

    (sources, targets), _ = corpus(args.data, "long", args.train_pairs, 1)
    vocabulary = SubwordVocabulary.train(
        sources + targets, vocabulary_size=args.vocabulary_size, seed=0
    )
    with tempfile.TemporaryDirectory() as folder:
        vocabulary_path = os.path.join(folder, "pieces.model")
        with open(vocabulary_path, "wb") as f:
            f.write(vocabulary.model)
        cache = os.path.join(folder, "cache")
        runs = {
            "no cache": run(args, vocabulary_path, None),
            "cache, first process (fills it)": run(args, vocabulary_path, cache),
            "cache, second process (reads it)": run(args, vocabulary_path, cache),
        }
    shapes = runs["no cache"]["shapes"]
    print(f"{args.train_pairs} training pairs, {args.valid_pairs} validation pairs, "
          f"{shapes} batch shapes (training and validation), JAX")  # fmt: skip
    print(f"{'process':<34} {'epoch 1 s':>10} {'epoch 2 s':>10} {'compiling s':>12}")
    for name, result in runs.items():
        first, second = result["epochs"]
        print(f"{name:<34} {first:10.1f} {second:10.1f} {first - second:12.1f}")
    if args.json:
        write_json(args, runs)


def write_json(args, runs):
    """The results file: a row per process, and its figures by name (`NAMES`)."""
    rows, figures = [], {"shapes": str(runs["no cache"]["shapes"])}
    figures["pairs"] = f"{args.train_pairs:,}"
    for name, result in runs.items():
        first, second = result["epochs"]
        key = NAMES[name]
        figures[f"{key}_first"], figures[f"{key}_second"] = f"{first:.1f}", f"{second:.1f}"
        figures[f"{key}_compiling"] = f"{first - second:.1f}"
        rows.append({"process": name, "first": f"{first:.1f}", "second": f"{second:.1f}"})
    settings = harness.settings_of(args, "train_pairs", "valid_pairs")
    harness.write_results(args.json, rows, figures=figures, settings=settings)


if __name__ == "__main__":
    main()
