"""Training tokens/s on Multi30k with and without length-bucketed batches, in one run.

    make bucketing [DATA=/path/to/multi30k]
    KERAS_BACKEND=jax python -m benchmarks.speed bucketing --data /path --seconds 60

The same model (benchmarks/translate.py's recipe) and the same training pairs, fed two ways:
`unbucketed`, 64 pairs a batch in corpus order, every batch padded to the longest pair of the
corpus (what `model.fit` on two padded arrays does); `bucketed`, `BucketedBatches` with a
token budget and buckets of `--bucket-width` (8 by default; `auto`, the class's default,
takes none on torch and on TensorFlow without a GPU, and `none` none anywhere). Every batch
shape is compiled first; then rounds alternate between the two (`--seconds` of training
each), and the medians of the real target tokens (targets and their end ids, no padding) per
second are printed with their ratio and each pipeline's share of padding.
"""

import argparse
import os
import statistics
import sys
import time

from benchmarks.harness import bucket_width


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the official files (default: download)")
    parser.add_argument("--tokens-per-batch", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64, help="unbucketed pairs a batch")
    parser.add_argument(
        "--bucket-width", type=bucket_width, default=8, help="bucketed's: a width, auto or none"
    )
    parser.add_argument("--vocabulary-size", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=40.0, help="training per round")
    parser.add_argument(
        "--backend", choices=["tensorflow", "jax", "torch"], help="default: $KERAS_BACKEND"
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.backend and os.environ.get("KERAS_BACKEND") != args.backend:
        env = dict(os.environ, KERAS_BACKEND=args.backend)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    import keras
    import numpy as np

    from benchmarks.translate import smoothed_loss
    from keras_luong import LuongSeq2Seq, SubwordVocabulary
    from keras_luong.data.batching import BucketedBatches
    from keras_luong.datasets import multi30k

    keras.utils.set_random_seed(0)
    english, german = multi30k.load_data(args.data)["train"]
    subwords = SubwordVocabulary.train(english + german, args.vocabulary_size)
    sources = [subwords.encode(s) for s in english]
    targets = [subwords.encode(t) for t in german]
    longest = max(max(len(s), len(t) + 1) for s, t in zip(sources, targets, strict=True))
    pipelines = {
        "unbucketed": BucketedBatches(
            sources, targets, args.batch_size * longest, bucket_width=longest, shuffle=False
        ),
        "bucketed": BucketedBatches(
            sources, targets, args.tokens_per_batch, bucket_width=args.bucket_width
        ),
    }
    model = LuongSeq2Seq(len(subwords), len(subwords), units=256, embedding_dim=128, dropout=0.3)
    model.compile(optimizer=keras.optimizers.Adam(1e-3, clipnorm=5.0),
                  loss=smoothed_loss(0.1))  # fmt: skip
    print(
        f"keras {keras.__version__}, backend {keras.backend.backend()}; {len(sources)} "
        f"Multi30k pairs, joint BPE {len(subwords)}; the translate recipe (256 units)"
    )

    def real_tokens(batch):
        return int(np.count_nonzero(batch[1]))

    # Compile every shape first (one batch of each).
    for name, batches in pipelines.items():
        started = time.perf_counter()
        seen = set()
        for index in range(len(batches)):
            batch = batches[index]
            if batch[1].shape not in seen:
                seen.add(batch[1].shape)
                model.train_on_batch(*batch)
        print(f"{name}: {len(seen)} batch shapes compiled in "
              f"{time.perf_counter() - started:.0f} s")  # fmt: skip

    rates = {name: [] for name in pipelines}
    position = dict.fromkeys(pipelines, 0)
    for round_ in range(args.rounds):
        for name, batches in pipelines.items():
            tokens, started = 0, time.perf_counter()
            while time.perf_counter() - started < args.seconds:
                batch = batches[position[name] % len(batches)]
                position[name] += 1
                model.train_on_batch(*batch)
                tokens += real_tokens(batch)
            rates[name].append(tokens / (time.perf_counter() - started))
        print(f"round {round_ + 1}: " + ", ".join(
            f"{name} {rates[name][-1]:.0f} tokens/s" for name in pipelines))  # fmt: skip

    unbucketed = statistics.median(rates["unbucketed"])
    bucketed = statistics.median(rates["bucketed"])
    print(f"\n{'pipeline':<12} {'padding':>8} {'batches':>8} {'tokens/s':>9}")
    for name, rate in (("unbucketed", unbucketed), ("bucketed", bucketed)):
        batches = pipelines[name]
        print(f"{name:<12} {batches.padding_share():8.1%} {len(batches):8d} {rate:9.0f}")
    print(f"bucketed / unbucketed training tokens/s: {bucketed / unbucketed:.2f}x")


if __name__ == "__main__":
    main()
