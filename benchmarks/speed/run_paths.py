"""Does the decoder's cell-only run path earn its place? A train step of a `LuongDecoder`
without input feeding over a cell that has no fused Keras layer (two stacked LSTM cells), run
two ways, interleaved in one run:

- `cell-only`: the shipped path: the RNN alone over the sequence (`masked_scan`), then the
  attention for all steps in one batched call;
- `in-loop`: the input-feeding loop's path, the attention inside the loop, once a step.

    KERAS_BACKEND=jax python -m benchmarks.speed run_paths [--rounds 5] [--length 50]

Prints ms per step (medians) and in-loop / cell-only; `--json FILE` writes them to the results
file a page quotes (`cell_only`, `in_loop`, `ratio`). Run nothing else beside it.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import harness  # noqa: E402
from keras_luong import GlobalAttention, LuongDecoder  # noqa: E402


def make_model(args, in_loop):
    cells = [keras.layers.LSTMCell(args.units) for _ in range(2)]
    decoder = LuongDecoder(
        keras.layers.StackedRNNCells(cells),
        GlobalAttention(attentional_units=args.units),
        input_feeding=False,
    )
    if in_loop:
        # The same signature: the step-by-step loop (attention inside) in the fast path's place.
        decoder._fast_path = super(LuongDecoder, decoder).run_sequence
    inputs = keras.Input((args.length, args.units))
    value = keras.Input((args.length, args.units))
    outputs = keras.layers.Dense(args.vocab)(decoder(inputs, value))
    model = keras.Model([inputs, value], outputs)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=keras.backend.backend() != "torch",
    )
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = [rng.normal(size=(args.batch, args.length, args.units)).astype("float32") for _ in "ab"]
    y = rng.integers(0, args.vocab, (args.batch, args.length))
    models = {"cell-only": make_model(args, False), "in-loop": make_model(args, True)}
    for model in models.values():
        model.train_on_batch(x, y)  # compile
    times = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                model.train_on_batch(x, y)
            times[name].append((time.perf_counter() - start) / args.steps)
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(
        f"backend {keras.backend.backend()}: B={args.batch}, S=T={args.length}, "
        f"units {args.units}, 2 stacked LSTM cells, no input feeding, {args.rounds} rounds"
    )
    for name, median in medians.items():
        print(f"{name:<10} {median * 1e3:8.1f} ms/step")
    print(f"in-loop / cell-only {medians['in-loop'] / medians['cell-only']:.2f}")
    if args.json:
        write_json(args, medians)


def write_json(args, medians):
    """The results file: each path's ms per step and in-loop / cell-only, as figures."""
    figures = {
        "cell_only": f"{1e3 * medians['cell-only']:.1f}",
        "in_loop": f"{1e3 * medians['in-loop']:.1f}",
        "ratio": f"{medians['in-loop'] / medians['cell-only']:.2f}",
    }
    rows = [{"path": name, "ms": f"{1e3 * median:.1f}"} for name, median in medians.items()]
    settings = harness.settings_of(args, "batch", "length", "units", "vocab", "rounds", "steps")
    harness.write_results(args.json, rows, figures=figures, settings=settings)


if __name__ == "__main__":
    main()
