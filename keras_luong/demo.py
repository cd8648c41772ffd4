"""A short, real run of Luong attention: learn to reverse digit strings.

    python -m keras_luong.demo [--score-mode general] [--epochs 8] [--backend jax]

An LSTM encoder reads a string of digits; an LSTM decoder, fed the reversed string shifted
right (teacher forcing), attends over the encoder states with `GlobalAttention` and predicts
the next digit from `h̃_t = tanh(W_c [c_t; h_t])`. Reversal needs each output step to look at
one source position, so the learned alignment is an anti-diagonal: the demo prints it.
"""

import argparse
import os
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--score-mode", default="general", choices=["dot", "general", "concat", "location"]
    )
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--examples", type=int, default=4000)
    parser.add_argument("--length", type=int, default=8, help="longest source string")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--backend",
        choices=["tensorflow", "jax", "torch"],
        help="Keras backend (default: the one Keras is configured with, $KERAS_BACKEND)",
    )
    return parser.parse_args(argv)


def make_reversal_data(examples, max_length, seed):
    """Digit strings of random length, 0-padded; targets are the reversed strings.

    Tokens: 0 padding, 1 start, 2..11 the digits 0..9."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, max_length + 1, examples)
    source = np.zeros((examples, max_length), "int32")
    target_in = np.zeros((examples, max_length), "int32")
    target_out = np.zeros((examples, max_length), "int32")
    for i, n in enumerate(lengths):
        digits = rng.integers(2, 12, n)
        source[i, :n] = digits
        target_out[i, :n] = digits[::-1]
        target_in[i, 0] = 1
        target_in[i, 1:n] = digits[::-1][:-1]
    return source, target_in, target_out


def build_model(score_mode, units, max_length, vocab=12):
    import keras

    from keras_luong import GlobalAttention

    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target_in")
    memory = keras.layers.LSTM(units, return_sequences=True)(
        keras.layers.Embedding(vocab, units, mask_zero=True)(source)
    )
    states = keras.layers.LSTM(units, return_sequences=True)(
        keras.layers.Embedding(vocab, units, mask_zero=True)(target)
    )
    attention = GlobalAttention(
        score_mode=score_mode,
        attentional_units=units,
        max_source_length=max_length,
        name="attention",
    )
    attentional, weights = attention(states, memory, return_attention_scores=True)
    logits = keras.layers.Dense(vocab, name="logits")(attentional)
    return keras.Model([source, target], logits), keras.Model([source, target], weights)


def main(argv=None):
    args = parse_args(argv)
    import keras
    import numpy as np

    if args.backend and args.backend != keras.backend.backend():
        # Keras fixes its backend at import (importing keras_luong imported it): start again.
        env = dict(os.environ, KERAS_BACKEND=args.backend)
        argv = sys.argv[1:] if argv is None else argv
        os.execve(sys.executable, [sys.executable, "-m", "keras_luong.demo", *argv], env)

    keras.utils.set_random_seed(args.seed)
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}")
    source, target_in, target_out = make_reversal_data(args.examples, args.length, args.seed)
    split = int(0.9 * len(source))
    model, alignment = build_model(args.score_mode, args.units, args.length)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=["accuracy"],
    )
    start = time.perf_counter()
    history = model.fit(
        [source[:split], target_in[:split]],
        target_out[:split],
        sample_weight=(target_out[:split] > 0).astype("float32"),
        validation_data=(
            [source[split:], target_in[split:]],
            target_out[split:],
            (target_out[split:] > 0).astype("float32"),
        ),
        batch_size=64,
        epochs=args.epochs,
        verbose=2,
    )
    seconds = time.perf_counter() - start
    losses = history.history["loss"]
    print(
        f"\ntrained {args.epochs} epochs in {seconds:.1f}s: "
        f"loss {losses[0]:.3f} -> {losses[-1]:.3f}"
    )
    print(f"held-out token accuracy: {history.history['val_accuracy'][-1]:.3f}")

    example = slice(split, split + 1)
    n = int((source[example] > 0).sum())
    predicted = np.argmax(model.predict([source[example], target_in[example]], verbose=0), -1)
    weights = alignment.predict([source[example], target_in[example]], verbose=0)[0, :n, :n]
    digits = lambda ids: "".join(str(i - 2) for i in ids[:n])  # noqa: E731
    print(
        f"\nsource {digits(source[split])}  target {digits(target_out[split])}  "
        f"teacher-forced prediction {digits(predicted[0])}"
    )
    print("attention weights (rows: output steps, columns: source positions):")
    for row in weights:
        print("  " + " ".join(f"{w:4.2f}" for w in row))
    on_antidiagonal = float(np.mean(np.argmax(weights, -1) == np.arange(n)[::-1]))
    print(f"steps whose strongest weight is on the mirrored source position: {on_antidiagonal:.0%}")
    if losses[-1] >= losses[0]:
        raise SystemExit("the loss did not fall")


if __name__ == "__main__":
    main()
