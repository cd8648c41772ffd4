"""Train-step time of one seq2seq model built four ways, on the current backend.

    KERAS_BACKEND=jax python benchmarks/decoder_step.py [--batch 64] [--length 50] [--units 256]

(a) the Keras-native recipe a user writes without this package: LSTM encoder, LSTM decoder,
    keras.layers.Attention (dot), Dense(tanh) on [c; h];
(b) LuongDecoder, input_feeding=False (the fast path), GlobalAttention dot;
(c) LuongDecoder with input feeding, GlobalAttention dot;
(d) (c) with LocalAttention (local-p, D=10, dot).
Each model's train step (`train_on_batch`, jit-compiled on JAX and TensorFlow) is timed in
interleaved rounds, so that the machine's noise falls on all four alike; the medians and the
ratios to (a) are printed. Goals: (b)/(a) <= 1.10 on every backend; (c)/(a) <= 1.6 on JAX and
TensorFlow.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_luong import GlobalAttention, LocalAttention, LuongDecoder  # noqa: E402


def encoder(source, vocab, units):
    embedded = keras.layers.Embedding(vocab, units, mask_zero=True)(source)
    return keras.layers.LSTM(units, return_sequences=True, return_state=True)(embedded)


def keras_native(vocab, units):
    source, target = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    memory, h, c = encoder(source, vocab, units)
    embedded = keras.layers.Embedding(vocab, units, mask_zero=True)(target)
    states = keras.layers.LSTM(units, return_sequences=True)(embedded, initial_state=[h, c])
    context = keras.layers.Attention()([states, memory])
    attentional = keras.layers.Dense(units, activation="tanh", use_bias=False)(
        keras.layers.Concatenate()([context, states])
    )
    return keras.Model([source, target], keras.layers.Dense(vocab)(attentional))


def luong(vocab, units, input_feeding, attention):
    source, target = keras.Input((None,), dtype="int32"), keras.Input((None,), dtype="int32")
    memory, h, c = encoder(source, vocab, units)
    embedded = keras.layers.Embedding(vocab, units, mask_zero=True)(target)
    decoder = LuongDecoder(keras.layers.LSTMCell(units), attention, input_feeding=input_feeding)
    attentional = decoder(embedded, memory, initial_state=[h, c])
    return keras.Model([source, target], keras.layers.Dense(vocab)(attentional))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=50, help="S = T")
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="train steps per model per round")
    args = parser.parse_args()
    backend = keras.backend.backend()
    u = args.units
    builders = {
        "a keras-native": lambda: keras_native(args.vocab, u),
        "b luong, no feeding": lambda: luong(
            args.vocab, u, False, GlobalAttention("dot", attentional_units=u)
        ),
        "c luong, feeding": lambda: luong(
            args.vocab, u, True, GlobalAttention("dot", attentional_units=u)
        ),
        "d luong, feeding, local-p": lambda: luong(
            args.vocab, u, True, LocalAttention(window=10, score_mode="dot", attentional_units=u)
        ),
    }
    rng = np.random.default_rng(0)
    shape = (args.batch, args.length)
    source = rng.integers(1, args.vocab, shape).astype("int32")
    target = rng.integers(1, args.vocab, shape).astype("int32")
    labels = rng.integers(1, args.vocab, shape).astype("int32")

    models = {}
    for name, build in builders.items():
        keras.utils.set_random_seed(0)
        model = build()
        model.compile(
            optimizer="adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=backend != "torch",
        )
        start = time.perf_counter()
        model.train_on_batch([source, target], labels)  # compile
        print(f"{name:<28} first step (compile) {time.perf_counter() - start:6.1f}s", flush=True)
        models[name] = model

    times = {name: [] for name in models}
    for _ in range(args.rounds):
        for name, model in models.items():
            start = time.perf_counter()
            for _ in range(args.steps):
                model.train_on_batch([source, target], labels)
            times[name].append((time.perf_counter() - start) / args.steps)

    print(
        f"\nbackend {backend}: B={args.batch}, S=T={args.length}, units={u}, vocab={args.vocab}, "
        f"median of {args.rounds} rounds x {args.steps} steps"
    )
    base = float(np.median(times["a keras-native"]))
    for name, values in times.items():
        median = float(np.median(values))
        print(f"{name:<28} {1e3 * median:8.1f} ms/step   ratio to (a) {median / base:5.2f}")
    b = float(np.median(times["b luong, no feeding"])) / base
    c = float(np.median(times["c luong, feeding"])) / base
    print(f"(b)/(a) = {b:.2f}  (goal <= 1.10: {'met' if b <= 1.10 else 'NOT met'})")
    print(
        f"(c)/(a) = {c:.2f}  "
        f"(goal <= 1.6 on JAX and TensorFlow: {'met' if c <= 1.6 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
