"""Train-step time of one seq2seq model built several ways, on the current backend.

    KERAS_BACKEND=jax python -m benchmarks.speed decoder_step [--lengths 50 200] [--mask] [--no-xla]

(a) the Keras-native recipe a user writes without this package: LSTM encoder, LSTM decoder,
    keras.layers.Attention (dot), Dense(tanh, no bias) on [c; h];
(b) LuongDecoder, input_feeding=False (the fast path), GlobalAttention dot;
(c) LuongDecoder with input feeding, GlobalAttention dot;
(d) (c) with LocalAttention (local-p, D=10, dot).
Both sides get the same inputs and the same masks: none by default, or with `--mask`
`mask_zero=True` on every embedding and real padding (a quarter of each row) in the data.
Each model's train step (`train_on_batch`; jit-compiled on JAX, on TensorFlow with XLA unless
`--no-xla`, which is Keras' default on a CPU-only machine; torch runs eagerly) is timed in
interleaved rounds, so that the machine's noise falls on all alike; medians and ratios to (a)
are printed for each target length T (S = T unless `--source`), then the linearity of (c)/(a)
in T, then where the time of (c) goes:
  forward      forward pass and loss only (`test_on_batch`), the rest is backward + update;
  attention    (c) minus (c) with the attention replaced by c_t = h_t;
  cell         that minus the same with the LSTM cell replaced by h_t = x_t W (no gates);
  bookkeeping  that minus the same model without the decoder's loop (the embeddings through
               the same Dense layers): the loop itself, states, masks, stacking;
  outside      encoder, embeddings, projection, loss and optimizer.
With `--memory` the peak resident memory of one (c) train step per T is printed as well
(a fresh process per T, so that earlier allocations do not count). `--json FILE` writes the
results file a page quotes (`figures_of`): each model's ms a step and its ratios per T, the
linearity, and the shares of (c)'s time.
"""

import argparse
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from benchmarks import harness  # noqa: E402
from keras_luong import GlobalAttention, LocalAttention, LuongDecoder  # noqa: E402
from keras_luong.attention.protocol import Attended  # noqa: E402


class IdentityAttention(GlobalAttention):
    """c_t := h_t (no score, softmax or weighted sum); still h̃ = tanh(W_c [c; h])."""

    def attend(self, query, memory, state, query_mask=None, step=None, training=None,
               return_attention_scores=False, draws=None):  # fmt: skip
        return Attended(self.attentional_state(query, query), None, None, state)


class LinearCell(keras.layers.Layer):
    """h_t = x_t W: a cell with the LSTM's state layout and none of its gates."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [units, units]
        self.output_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")

    def call(self, inputs, states, training=None):
        h = ops.matmul(inputs, self.kernel)
        return h, [h, states[1]]


def embed(ids, vocab, units, mask):
    return keras.layers.Embedding(vocab, units, mask_zero=mask)(ids)


def build(name, vocab, units, mask):
    source, target = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    memory, h, c = keras.layers.LSTM(units, return_sequences=True, return_state=True)(
        embed(source, vocab, units, mask)
    )
    embedded = embed(target, vocab, units, mask)
    if name == "a":
        states = keras.layers.LSTM(units, return_sequences=True)(embedded, initial_state=[h, c])
        context = keras.layers.Attention()([states, memory])
        attentional = keras.layers.Dense(units, activation="tanh", use_bias=False)(
            keras.layers.Concatenate()([context, states])
        )
    elif name == "no loop":
        attentional = keras.layers.Dense(units, activation="tanh", use_bias=False)(
            keras.layers.Concatenate()([embedded, embedded])
        )
    else:
        cell = LinearCell(units) if name == "no cell" else keras.layers.LSTMCell(units)
        attention = {
            "d": lambda: LocalAttention(window=10, score_mode="dot", attentional_units=units),
            "no attention": lambda: IdentityAttention("dot", attentional_units=units),
            "no cell": lambda: IdentityAttention("dot", attentional_units=units),
        }.get(name, lambda: GlobalAttention("dot", attentional_units=units))()
        decoder = LuongDecoder(cell, attention, input_feeding=name != "b")
        attentional = decoder(embedded, memory, initial_state=[h, c])
    return keras.Model([source, target], keras.layers.Dense(vocab)(attentional))


def data(args, source_length, target_length):
    rng = np.random.default_rng(0)
    source = rng.integers(1, args.vocab, (args.batch, source_length)).astype("int32")
    target = rng.integers(1, args.vocab, (args.batch, target_length)).astype("int32")
    labels = rng.integers(1, args.vocab, (args.batch, target_length)).astype("int32")
    if args.mask:  # a quarter of each row is padding, at the end
        source[:, 3 * source_length // 4 :] = 0
        target[:, 3 * target_length // 4 :] = 0
        labels[:, 3 * target_length // 4 :] = 0
    return [source, target], labels


def compiled(name, args):
    keras.utils.set_random_seed(0)
    model = build(name, args.vocab, args.units, args.mask)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=keras.backend.backend() != "torch" and not args.no_xla,
    )
    return model


def time_models(runs, rounds, steps):
    """Interleaved rounds: `steps` calls of each run in turn; median seconds per call."""
    for run in runs.values():
        run()  # compile
        run()
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            for _ in range(steps):
                run()
            times[name].append((time.perf_counter() - start) / steps)
    return {name: float(np.median(values)) for name, values in times.items()}


def peak_memory(args, length):
    """Peak RSS (MiB) of a fresh process that builds (c) and runs two train steps."""
    code = (
        "import sys; sys.argv = sys.argv[:1] + sys.argv[2:]; "
        "import benchmarks.speed.decoder_step as b; b.one_step_memory()"
    )
    flags = ["--lengths", str(length), "--units", str(args.units), "--batch", str(args.batch)]
    flags += ["--mask"] * args.mask + ["--no-xla"] * args.no_xla
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", code, "x", *flags],
        capture_output=True,
        text=True,
        cwd=root,
        env=dict(os.environ, PYTHONPATH=root),
    )
    return float(out.stdout.strip().splitlines()[-1])


def one_step_memory():
    args = parse()
    length = args.lengths[0]
    x, y = data(args, args.source or length, length)
    model = compiled("c", args)
    model.train_on_batch(x, y)
    model.train_on_batch(x, y)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 200], help="T values")
    parser.add_argument("--source", type=int, default=None, help="S (default: S = T)")
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2, help="train steps per model per round")
    parser.add_argument("--mask", action="store_true", help="mask_zero and padding, both sides")
    parser.add_argument("--no-xla", action="store_true", help="TensorFlow without XLA")
    parser.add_argument("--no-breakdown", action="store_true")
    parser.add_argument("--memory", action="store_true", help="peak memory of (c) per T")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    return parser.parse_args()


def main():
    args = parse()
    backend = keras.backend.backend()
    mode = {"jax": "jit", "torch": "eager"}.get(backend, "eager graph" if args.no_xla else "XLA")
    print(
        f"backend {backend} ({mode}): B={args.batch}, units={args.units}, vocab={args.vocab}, "
        f"masks {'on' if args.mask else 'off'}, median of {args.rounds} interleaved rounds x "
        f"{args.steps} steps"
    )
    ratios, medians, shares = {}, {}, {}
    for length in args.lengths:
        x, y = data(args, args.source or length, length)
        names = ["a", "b", "c", "d"]
        if not args.no_breakdown and length == args.lengths[0]:
            names += ["no attention", "no cell", "no loop"]
        models = {name: compiled(name, args) for name in names}
        runs = {name: (lambda m=m, x=x, y=y: m.train_on_batch(x, y)) for name, m in models.items()}
        runs["c forward"] = lambda m=models["c"], x=x, y=y: m.test_on_batch(x, y)
        med = time_models(runs, args.rounds, args.steps)
        medians[length] = med
        print(f"\nS={args.source or length}, T={length}")
        for name in ("a", "b", "c", "d"):
            print(f"  ({name}) {1e3 * med[name]:8.1f} ms/step   /(a) {med[name] / med['a']:5.2f}")
        ratios[length] = med["c"] / med["a"]
        print(f"  (d)/(c) {med['d'] / med['c']:5.2f}")
        if "no loop" in med:
            c = med["c"]
            parts = {
                "forward (c fwd+loss)": med["c forward"],
                "backward + update": c - med["c forward"],
                "attention": c - med["no attention"],
                "cell": med["no attention"] - med["no cell"],
                "bookkeeping (loop)": med["no cell"] - med["no loop"],
                "outside the loop": med["no loop"],
            }
            print("  where the time of (c) goes:")
            for part, value in parts.items():
                print(f"    {part:<22} {1e3 * value:8.1f} ms  {100 * value / c:5.1f}%")
            shares = {part.split(" (")[0]: value / c for part, value in parts.items()}
    if len(args.lengths) > 1:
        first, last = args.lengths[0], args.lengths[-1]
        print(
            f"\nlinearity: (c)/(a) at T={last} over (c)/(a) at T={first} = "
            f"{ratios[last]:.2f}/{ratios[first]:.2f} = {ratios[last] / ratios[first]:.2f}"
            "  (goal <= 1.15)"
        )
    if args.memory:
        for length in args.lengths:
            print(f"peak RSS of (c), T={length}: {peak_memory(args, length):.0f} MiB")
    if args.json:
        figures = figures_of(medians, shares)
        settings = harness.settings_of(
            args, "batch", "lengths", "source", "units", "vocab", "rounds", "steps", "mask"
        )
        settings["mode"] = mode
        harness.write_figures(args.json, figures, settings)


def figures_of(medians, shares):
    """The figures of a run, by name: for each T, each model's ms a step (`a_50`), its time
    over (a)'s (`c_over_a_50`) and (d)'s over (c)'s (`d_over_c_50`); `linearity`, (c)/(a) at
    the last T over the first; the share of (c)'s time of each part (`cell_share`, in %)."""
    figures = {}
    for length, med in medians.items():
        for name in ("a", "b", "c", "d"):
            figures[f"{name}_{length}"] = f"{1e3 * med[name]:.1f}"
        for name in ("b", "c", "d"):
            figures[f"{name}_over_a_{length}"] = f"{med[name] / med['a']:.2f}"
        figures[f"d_over_c_{length}"] = f"{med['d'] / med['c']:.2f}"
    first, last = min(medians), max(medians)
    if last != first:
        ratios = {n: medians[n]["c"] / medians[n]["a"] for n in (first, last)}
        figures["linearity"] = f"{ratios[last] / ratios[first]:.2f}"
    for part, share in shares.items():
        figures[f"{harness.figure_key(part)}_share"] = f"{100 * share:.0f}%"
    return figures


if __name__ == "__main__":
    main()
