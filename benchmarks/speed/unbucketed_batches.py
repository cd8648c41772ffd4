"""Does training go faster on batches padded to their own longest (`BucketedBatches(...,
bucket_width=None)`, as OpenNMT-py batches) than on the recipe's length buckets (width 8)? The
recipe's model (`harness.recipe_model`), twice from one seed, trains an epoch of
each kind of batches of a side-by-side run's corpus in turn in one process, a step at a time
(`harness.interleaved_medians`, the first epoch of each before the clock); both
epochs hold the same real target tokens, so the ratio of their medians is the ratio of the
speeds. It prints each kind's batches, padding and real target tokens a batch, the medians,
and the target tokens a second.

    python -m benchmarks.opennmt epochs --data <multi30k folder> --corpus long \\
        --train-pairs 3000 --engines torch --workdir side
    KERAS_BACKEND=torch python -m benchmarks.speed unbucketed_batches --workdir side

Run nothing else beside it. On JAX every new batch shape compiles a new train step, so
`bucket_width=None` is not for JAX; TensorFlow (without XLA) and torch take any shape.
"""

import argparse


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir", required=True, help="the --workdir of python -m benchmarks.opennmt epochs"
    )
    parser.add_argument("--pairs", type=int, default=None, help="the first pairs only")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import keras

    from benchmarks.harness import bucketed, interleaved_medians, path, read_lines, recipe_model
    from keras_luong import SubwordVocabulary

    with open(path(args, "pieces.model"), "rb") as f:
        subwords = SubwordVocabulary(f.read())
    sources = read_lines(args, "train.src.txt")[: args.pairs]
    targets = read_lines(args, "train.tgt.txt")[: args.pairs]
    kinds = {"width 8": 8, "unbucketed": None}
    batches, versions = {}, {}
    for name, width in kinds.items():
        batches[name] = bucketed(subwords, sources, targets, True, 0, width)
        model = recipe_model(subwords, 0)

        def epoch(model=model, data=batches[name]):
            # A step at a time: each `fit` call would trace TensorFlow's step anew for its
            # new `tf.data` pipeline (its epochs after the first cost what these do).
            for index in range(len(data)):
                model.train_on_batch(*data[index])
            keras.ops.convert_to_numpy(model.trainable_variables[-1])  # the last update done

        versions[name] = {"epoch": epoch}
    medians = interleaved_medians(versions, ["epoch"], args.rounds, calls=1)
    tokens = batches["width 8"].target_tokens()
    print(f"backend {keras.backend.backend()}, {len(sources)} pairs, {tokens} target tokens "
          f"(with the end id), {args.rounds} rounds, medians")  # fmt: skip
    print(f"{'batches':<12} {'count':>6} {'padding':>8} {'real/batch':>11} {'epoch s':>8} "
          f"{'tok/s':>7} {'speed':>6}")  # fmt: skip
    for name, data in batches.items():
        seconds = medians[(name, "epoch")]
        speed = medians[("width 8", "epoch")] / seconds
        print(f"{name:<12} {len(data):>6} {data.padding_share():>8.1%} "
              f"{tokens / len(data):>11.0f} {seconds:>8.1f} {tokens / seconds:>7.0f} "
              f"{speed:>6.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
