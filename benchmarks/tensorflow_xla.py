"""Does XLA speed up the translation recipe's training on TensorFlow? The recipe's model
(`opennmt_side_by_side.recipe_model`) compiled twice, with Keras' default (no XLA on a machine
without a GPU) and with `jit_compile=True`, trains the same length-bucketed batches of a
side-by-side run's corpus in turn in one process, every batch shape compiled first; it prints
each round's seconds and the median ratio, XLA over graph (below 1: XLA faster).

    python benchmarks/opennmt_side_by_side.py --data <multi30k folder> --corpus long \\
        --train-pairs 3000 --engines tensorflow --workdir side
    KERAS_BACKEND=tensorflow python benchmarks/tensorflow_xla.py --workdir side

Run nothing else beside it.
"""

import argparse
import os
import sys
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, help="an opennmt_side_by_side.py workdir")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import keras
    from opennmt_side_by_side import path, read_lines, recipe_model
    from seed_study import bucketed

    from keras_luong import SubwordVocabulary

    if keras.backend.backend() != "tensorflow":
        raise SystemExit("Run it with KERAS_BACKEND=tensorflow")
    with open(path(args, "pieces.model"), "rb") as f:
        subwords = SubwordVocabulary(f.read())
    sources, targets = read_lines(args, "train.src.txt"), read_lines(args, "train.tgt.txt")
    batches = bucketed(subwords, sources, targets, shuffle=True, seed=0)
    batches = [batches[i] for i in range(len(batches))]
    models = {"graph": recipe_model(subwords, 0), "xla": recipe_model(subwords, 0, xla=True)}
    for model in models.values():
        for inputs, labels in batches:  # every shape compiled before the clock
            model.train_on_batch(inputs, labels)
    seconds = {name: [] for name in models}
    for round_ in range(args.rounds):
        for name in list(models) if round_ % 2 == 0 else list(models)[::-1]:
            start = time.perf_counter()
            for inputs, labels in batches:
                models[name].train_on_batch(inputs, labels)
            seconds[name].append(time.perf_counter() - start)
            print(f"round {round_}: {name} {seconds[name][-1]:.1f} s", flush=True)
    ratio = np.median(seconds["xla"]) / np.median(seconds["graph"])
    print(f"{len(batches)} batches; XLA / graph, medians of {args.rounds} rounds: {ratio:.3f}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
