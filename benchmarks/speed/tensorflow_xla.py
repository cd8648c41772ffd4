"""Does XLA speed up the translation recipe's training on TensorFlow? The recipe's model
(`harness.recipe_model`) compiled twice, with Keras' default (no XLA on a machine
without a GPU) and with `jit_compile=True`, trains the same length-bucketed batches of a
side-by-side run's corpus in turn in one process (`harness.interleaved_medians`),
every batch shape compiled first; it prints the median epoch of each and their ratio, XLA
over graph (below 1: XLA faster).

    python -m benchmarks.opennmt epochs --data <multi30k folder> --corpus long \\
        --train-pairs 3000 --engines tensorflow --workdir side
    KERAS_BACKEND=tensorflow python -m benchmarks.speed tensorflow_xla --workdir side

Run nothing else beside it.
"""

import argparse


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir", required=True, help="the --workdir of python -m benchmarks.opennmt epochs"
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import keras

    from benchmarks.harness import (
        bucketed,
        interleaved_medians,
        path,
        print_ratios,
        read_lines,
        recipe_model,
    )
    from keras_luong import SubwordVocabulary

    if keras.backend.backend() != "tensorflow":
        raise SystemExit("Run it with KERAS_BACKEND=tensorflow")
    with open(path(args, "pieces.model"), "rb") as f:
        subwords = SubwordVocabulary(f.read())
    sources, targets = read_lines(args, "train.src.txt"), read_lines(args, "train.tgt.txt")
    batches = bucketed(subwords, sources, targets, shuffle=True, seed=0)
    batches = [batches[i] for i in range(len(batches))]
    models = {"graph": recipe_model(subwords, 0), "xla": recipe_model(subwords, 0, xla=True)}

    def epoch(model):
        for inputs, labels in batches:
            model.train_on_batch(inputs, labels)

    # The first call of each compiles every batch shape, before the clock.
    versions = {name: {"epoch": lambda m=model: epoch(m)} for name, model in models.items()}
    medians = interleaved_medians(versions, ["epoch"], args.rounds, calls=1)
    print(f"{len(batches)} batches")
    print_ratios(medians, ["epoch"], "xla", "graph", args.rounds, 1)


if __name__ == "__main__":
    main()
