"""What the token-id checks of `fit` cost: each kind of training data's check against one
train step and one epoch of the default model, timed in one process:

    KERAS_BACKEND=jax python -m benchmarks.speed id_checks

`fit` and `evaluate` check the ids once per call, before the first step, outside the
compiled train step (which they leave as it is): arrays whole, `BucketedBatches` by the
largest ids it found when it was built, another `keras.utils.PyDataset` and a
`tf.data.Dataset` by their first batch (read once more; a `tf.data` pipeline starts a new
iterator for it, which fills a shuffle buffer if it has one). The corpus is Multi30k-sized
(29,000 pairs of 4-40 tokens, vocabularies of 8,000), the batches of 64 pairs.
"""

import argparse
import statistics
import time

import numpy as np


def timed(function, repeats):
    """The median of `repeats` timings of `function()`, in seconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=29000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    import keras
    import tensorflow as tf

    from keras_luong import BucketedBatches, LuongSeq2Seq, SequenceLoss

    rng = np.random.default_rng(0)
    vocabulary, batch = 8000, 64
    lengths = rng.integers(4, 41, size=(args.pairs, 2))
    sources = [rng.integers(4, vocabulary, n) for n in lengths[:, 0]]
    targets = [rng.integers(4, vocabulary, n) for n in lengths[:, 1]]
    pad = keras.utils.pad_sequences
    source = pad(sources, padding="post")
    target_in = pad([[1, *t] for t in targets], padding="post")
    target_out = pad([[*t, 2] for t in targets], padding="post")

    class Batches(keras.utils.PyDataset):
        """A user's own batches: fixed-size slices of the padded arrays."""

        def __len__(self):
            return -(-len(source) // batch)

        def __getitem__(self, i):
            rows = slice(i * batch, (i + 1) * batch)
            return (source[rows], target_in[rows]), target_out[rows]

    pipeline = (
        tf.data.Dataset.from_tensor_slices(((source, target_in), target_out))
        .shuffle(10000, seed=0)
        .batch(batch)
    )
    bucketed = BucketedBatches(sources, targets, tokens_per_batch=batch * 40)
    model = LuongSeq2Seq(vocabulary, vocabulary, units=256, embedding_dim=128)
    model.compile("adam", SequenceLoss())
    steps = 20
    model.fit(Batches(), epochs=1, steps_per_epoch=3, verbose=0)  # compiled
    started = time.perf_counter()
    model.fit(Batches(), epochs=1, steps_per_epoch=steps, verbose=0)
    step = (time.perf_counter() - started) / steps
    epoch = step * len(Batches())

    cases = {
        "arrays (whole)": lambda: model._check_data((source, target_in), target_out),
        "BucketedBatches (largest ids)": lambda: model._check_data(bucketed),
        "PyDataset (first batch)": lambda: model._check_data(Batches()),
        "tf.data, shuffle buffer 10,000 (first batch)": lambda: model._check_data(pipeline),
    }
    print(f"backend {keras.backend.backend()}, {args.pairs} pairs, batches of {batch}")
    print(
        f"one train step: {1000 * step:.1f} ms; one epoch of {len(Batches())} steps: {epoch:.0f} s"
    )
    print()
    print("| training data | check ms | / one train step | / one epoch |")
    print("|---|---:|---:|---:|")
    for name, check in cases.items():
        seconds = timed(check, args.repeats)
        print(f"| {name} | {1000 * seconds:.2f} | {seconds / step:.3f} | {seconds / epoch:.5f} |")


if __name__ == "__main__":
    main()
