"""Does local attention's O(D) survive inside a model? Train-step time as the source grows.

    KERAS_BACKEND=jax python -m benchmarks.speed source_length [--sources 200 2000] [--length 50]

Times, in interleaved rounds on the current backend (jit-compiled on JAX and TensorFlow,
eager torch), one train step of
  model    `LuongSeq2Seq` (biLSTM encoder, input feeding), local-p and global attention;
  decoder  the same `LuongDecoder`s alone, the encoder states given as an input, so that the
           encoder's own O(S) recurrence is left out and only the attention's cost remains;
for each source length S (T fixed), and prints each time over its time at the smallest S
(goal for local-p: <= 1.3). `--json FILE` writes the results file a page quotes: the table of
those ratios at the largest S (`model_local_p`, `decoder_global`, ...) and each time in ms.
Run nothing else beside it.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import harness  # noqa: E402
from keras_luong import GlobalAttention, LocalAttention, LuongDecoder, LuongSeq2Seq  # noqa: E402

ROWS = {
    "model": "`LuongSeq2Seq` (biLSTM encoder over S)",
    "decoder": "`LuongDecoder` alone, the encoder states given",
}


def decoder_model(alignment, vocab, units):
    memory = keras.Input((None, units))
    target = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(vocab, units)(target)
    if alignment == "global":
        attention = GlobalAttention("general", attentional_units=units)
    else:
        attention = LocalAttention(window=10, score_mode="general", attentional_units=units)
    decoded = LuongDecoder(keras.layers.LSTMCell(units), attention)(embedded, memory)
    return keras.Model([memory, target], keras.layers.Dense(vocab)(decoded))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--sources", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--length", type=int, default=50, help="T")
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)
    backend = keras.backend.backend()
    rng = np.random.default_rng(0)
    b, t, u, v = args.batch, args.length, args.units, args.vocab
    target = rng.integers(1, v, (b, t)).astype("int32")
    labels = rng.integers(1, v, (b, t)).astype("int32")

    runs = {}
    for s in args.sources:
        source = rng.integers(3, v, (b, s)).astype("int32")
        memory = rng.standard_normal((b, s, u)).astype("float32")
        for alignment in ("local-p", "global"):
            keras.utils.set_random_seed(0)
            model = LuongSeq2Seq(v, v, units=u, embedding_dim=64, alignment=alignment)
            decoder = decoder_model(alignment, v, u)
            for name, m, x in (("model", model, (source, target)), ("decoder", decoder, None)):
                m.compile(
                    optimizer="adam",
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    jit_compile=backend != "torch",
                )
                x = x if x is not None else [memory, target]
                runs[(name, alignment, s)] = lambda m=m, x=x: m.train_on_batch(x, labels)
    for run in runs.values():
        run()
        run()
    times = {key: [] for key in runs}
    for _ in range(args.rounds):
        for key, run in runs.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                run()
            times[key].append((time.perf_counter() - start) / args.steps)
    med = {key: float(np.median(values)) for key, values in times.items()}
    print(
        f"backend {backend}: B={b}, T={t}, units={u}, general score, D=10, "
        f"median of {args.rounds} interleaved rounds x {args.steps} steps"
    )
    first = args.sources[0]
    for name in ("model", "decoder"):
        for alignment in ("local-p", "global"):
            cells = []
            for s in args.sources:
                ratio = med[(name, alignment, s)] / med[(name, alignment, first)]
                cells.append(f"S={s}: {1e3 * med[(name, alignment, s)]:7.1f} ms ({ratio:4.2f})")
            print(f"{name:<8} {alignment:<8} " + "   ".join(cells))
    if args.json:
        write_json(args, med)


def write_json(args, med):
    """The results file: a row per model (`ROWS`) with each attention's time at the largest S
    over its time at the smallest, and the figures by name (`model_local_p` for that ratio,
    `model_local_p_200` for the time in ms at S = 200, ...)."""
    first, last = args.sources[0], args.sources[-1]
    rows, figures = [], {}
    for name, label in ROWS.items():
        row = {"model": label}
        for alignment in ("local-p", "global"):
            key = f"{name}_{alignment.replace('-', '_')}"
            row[alignment] = f"{med[(name, alignment, last)] / med[(name, alignment, first)]:.2f}"
            figures[key] = row[alignment]
            for size in args.sources:
                figures[f"{key}_{size}"] = f"{1e3 * med[(name, alignment, size)]:.1f}"
        rows.append(row)
    header = f"S = {last} over S = {first}"
    columns = [("model", header, False), ("local-p", "local-p", True), ("global", "global", True)]
    settings = harness.settings_of(args, "batch", "length", "units", "vocab", "rounds", "steps")
    tables = {"ratios": {"columns": columns}}
    harness.write_results(args.json, rows, figures=figures, settings=settings, tables=tables)


if __name__ == "__main__":
    main()
