"""`translate` in length-sorted batches against one padded array, on the same model and texts.

    KERAS_BACKEND=jax .venv/bin/python -m benchmarks.speed translate_batching \\
        --model runs/multi30k/translate.keras --data /path/to/multi30k

The model is a `.keras` file with its vocabularies inside (`benchmarks/translate.py` saves
one); the texts are Multi30k test2016's English side. "padded" is what `translate` did before
it sorted: every text encoded into one array padded to the longest of the call, decoded in
batches of `--batch-size` (256, its default then) in the caller's order, up to one bound for
the whole call (1.5 × the longest text's tokens + 10). "sorted" is `translate` now, with its
defaults (`--sorted-batch-size` to change its batch; each text's own bound). They alternate
over `--rounds` rounds after one warm-up call each (which compiles); the script prints the
median seconds, their ratio, and how many outputs differ, printing the first few: a text whose
output reaches a bound gets the longer one where the bound is longer.
"""

import argparse
import statistics
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", help="folder of the official Multi30k files (else download)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--sorted-batch-size", type=int, help="translate's (default: its own)")
    parser.add_argument("--sampler", default="greedy", choices=("greedy", "beam"))
    args = parser.parse_args(argv)

    import keras
    import numpy as np

    from keras_luong import BeamSearchSampler
    from keras_luong.datasets import multi30k

    model = keras.saving.load_model(args.model, compile=False)  # decoding needs no loss
    texts = multi30k.load_data(args.data)["test2016"][0]
    source, target = model.source_vocabulary, model.target_vocabulary
    rows = [source.encode(t) for t in texts]
    max_length = int(1.5 * max(len(r) for r in rows)) + 10
    sampler = BeamSearchSampler(5, 1.0) if args.sampler == "beam" else "greedy"

    def padded():
        ids = model.generate(
            source.encode_batch(texts), max_length, sampler=sampler, batch_size=args.batch_size
        )
        return [target.decode(row) for row in ids]

    def sorted_batches():
        extra = {"batch_size": args.sorted_batch_size} if args.sorted_batch_size else {}
        return model.translate(texts, sampler=sampler, **extra)

    lengths = np.array([len(r) for r in rows])
    print(
        f"{len(texts)} texts, source tokens mean {lengths.mean():.1f}, longest {lengths.max()} "
        f"({lengths.max() / lengths.mean():.2f}x the mean); padded's max_length {max_length}; "
        f"{args.sampler}; backend {keras.backend.backend()}",
        flush=True,
    )
    outputs = {"padded": padded(), "sorted": sorted_batches()}  # warm-up: compiles
    times = {"padded": [], "sorted": []}
    for _ in range(args.rounds):
        for name, run in (("padded", padded), ("sorted", sorted_batches)):
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name in ("padded", "sorted"):
        print(f"{name:<8} median {medians[name]:.2f} s  (rounds: "
              f"{', '.join(f'{t:.2f}' for t in times[name])})")  # fmt: skip
    print(f"speed-up padded / sorted: {medians['padded'] / medians['sorted']:.2f}x")
    differ = [i for i, (a, b) in enumerate(zip(*outputs.values(), strict=True)) if a != b]
    print(f"outputs that differ: {len(differ)} of {len(texts)} "
          f"({100 * (1 - len(differ) / len(texts)):.1f}% the same)")  # fmt: skip
    cut = [i for i in differ if any(a.startswith(b) for a, b in (
        (outputs["padded"][i], outputs["sorted"][i]), (outputs["sorted"][i], outputs["padded"][i])
    ))]  # fmt: skip
    print(f"of which one output starts the other (a bound reached): {len(cut)}")
    for i in differ[:3]:
        print(f"  [{i}] padded: {outputs['padded'][i]}\n  [{i}] sorted: {outputs['sorted'][i]}")


if __name__ == "__main__":
    main()
