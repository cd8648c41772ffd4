"""Does an epoch of `fit` on TensorFlow wait for tf.data's autotuning? Keras reads a
`keras.utils.PyDataset` of one worker through `tf.data.Dataset.from_generator(...)
.prefetch(tf.data.AUTOTUNE)`, and makes a new iterator for every epoch. Dropping the old one
waits for the autotuning thread, which sleeps between its rounds and is not woken: the next
epoch's first batch starts that much later.
`BucketedBatches` on TensorFlow defaults to two worker threads, which Keras reads through its
own queue with tf.data's autotuning off.

Two parts, in one process, one after the other:

1. tf.data alone: a generator of `--batches` elements read at `--step-seconds` each, as
   batches a train step consumes; the time to drop an epoch's iterator and make the next,
   with autotuning on and off.
2. With `--workdir` (a `python -m benchmarks.opennmt epochs` workdir): the translation
   recipe's model trained by `fit` on `--pairs` of its pairs, `BucketedBatches` with one
   worker (Keras' reading through tf.data) and with its default (two threads on TensorFlow),
   `--epochs` each; per epoch, the time from its start to its first batch and the epoch's time.

    KERAS_BACKEND=tensorflow python -m benchmarks.speed tensorflow_epoch_stall \\
        --workdir .cache/opennmt-epochs --pairs 800 --epochs 4

Run nothing else beside it.
"""

import argparse
import statistics
import time


def iterator_drops(batches, step_seconds, epochs, autotune):
    """The seconds each of `epochs` new iterators took to make, the old one dropped."""
    import numpy as np
    import tensorflow as tf

    def generate():
        for _ in range(batches):
            yield np.zeros((64, 32), "int32")

    spec = tf.TensorSpec([None, None], tf.int32)
    dataset = tf.data.Dataset.from_generator(generate, output_signature=spec)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    if not autotune:
        options = tf.data.Options()
        options.autotune.enabled = False
        dataset = dataset.with_options(options)
    iterator, drops = iter(dataset), []
    for _ in range(epochs):
        for _ in range(batches):
            next(iterator)
            time.sleep(step_seconds)
        start = time.perf_counter()
        iterator = iter(dataset)
        drops.append(time.perf_counter() - start)
    return drops


def fit_epochs(args, workers):
    """`(waits, epochs)`: per epoch, the seconds from its start to its first batch, and its
    seconds, for `fit` on `BucketedBatches` with `workers` (None: its default)."""
    import keras

    from benchmarks.harness import bucketed, path, read_lines, recipe_model
    from keras_luong import SubwordVocabulary

    with open(path(args, "pieces.model"), "rb") as f:
        subwords = SubwordVocabulary(f.read())
    sources = read_lines(args, "train.src.txt")[: args.pairs]
    targets = read_lines(args, "train.tgt.txt")[: args.pairs]
    extra = {} if workers is None else {"workers": workers}
    batches = bucketed(subwords, sources, targets, True, 0, "auto", **extra)
    model = recipe_model(subwords, 0)
    waits, epochs = [], []

    class Clock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start, self.first = time.perf_counter(), None

        def on_train_batch_begin(self, batch, logs=None):
            if self.first is None:
                self.first = time.perf_counter()
                waits.append(self.first - self.start)

        def on_epoch_end(self, epoch, logs=None):
            epochs.append(time.perf_counter() - self.start)

    model.fit(batches, epochs=args.epochs, verbose=0, callbacks=[Clock()])
    return batches.workers, waits, epochs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=13)
    parser.add_argument("--step-seconds", type=float, default=0.8)
    parser.add_argument("--drops", type=int, default=5, help="iterators dropped in part 1")
    parser.add_argument(
        "--workdir", help="the --workdir of python -m benchmarks.opennmt epochs (part 2)"
    )
    parser.add_argument("--pairs", type=int, default=800)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    import keras

    if keras.backend.backend() != "tensorflow":
        raise SystemExit("Run it with KERAS_BACKEND=tensorflow")
    print(f"tf.data alone: {args.batches} elements at {args.step_seconds} s each, per epoch")
    for autotune in (True, False):
        drops = iterator_drops(args.batches, args.step_seconds, args.drops, autotune)
        print(
            f"  autotune {'on ' if autotune else 'off'}: next epoch's iterator after "
            + ", ".join(f"{d:.2f}" for d in drops)
            + " s"
        )
    if not args.workdir:
        return
    print(f"fit, {args.pairs} pairs, {args.epochs} epochs (the first traces the step)")
    for workers in (1, None):
        workers, waits, epochs = fit_epochs(args, workers)
        later = epochs[1:] or epochs
        print(
            f"  workers={workers}: first batch after "
            + ", ".join(f"{w:.2f}" for w in waits)
            + " s; epochs "
            + ", ".join(f"{e:.1f}" for e in epochs)
            + f" s (median after the first {statistics.median(later):.1f} s)"
        )


if __name__ == "__main__":
    main()
