"""The demo: a Luong translation model learns to read dates written in 15 locales.

    python -m keras_luong.demo [--alignment global] [--score-mode general] [--epochs 12]

Trains `LuongSeq2Seq` on CLDR-formatted dates (Babel) -> ISO `YYYY-MM-DD`, character by
character, then prints held-out exact-match accuracy (greedy decoding), alignment accuracy
and AER against the gold links, translates a few dates with greedy and beam search
(`keras_luong.BeamSearchSampler`), shows an n-best list, saves an attention heatmap, and
exports a TensorFlow SavedModel whose `serve` signature maps source ids to translated ids.
"""

import argparse
import os
import subprocess
import sys
import textwrap
import time

import keras_luong.models.seq2seq  # noqa: F401, E402 (its import registers the alignment names)

# Already imported with the package (`python -m keras_luong.demo` runs its __init__ first).
from keras_luong.attention.alignments import registered_alignments
from keras_luong.attention.global_attention import GlobalAttention


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m keras_luong.demo",
        description="Trains a Luong attention model to translate dates written in 15 locales "
        "into ISO YYYY-MM-DD, then evaluates, decodes, plots and exports it.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--alignment",
        default="global",
        choices=registered_alignments(),
        help="global attention, local-m, local-p, or another registered alignment",
    )
    parser.add_argument(
        "--score-mode",
        default="general",
        choices=GlobalAttention.score_modes,
        help="the score function (location: global only)",
    )
    parser.add_argument("--window", type=int, default=10, help="local window half-width D")
    parser.add_argument(
        "--no-input-feeding",
        dest="input_feeding",
        action="store_false",
        help="do not feed h~_{t-1} to the decoder (the fused-LSTM fast path)",
    )
    parser.add_argument("--epochs", type=int, default=15, help="training epochs")
    parser.add_argument(
        "--examples", type=int, default=20000, help="dates generated (80/10/10 split)"
    )
    parser.add_argument("--units", type=int, default=128, help="encoder and decoder size")
    parser.add_argument("--batch-size", type=int, default=64, help="training batch size")
    parser.add_argument("--beam-width", type=int, default=4, help="beams of the beam search")
    parser.add_argument(
        "--length-penalty", type=float, default=1.0, help="GNMT's alpha for beam search"
    )
    parser.add_argument("--seed", type=int, default=0, help="data and weight seed")
    parser.add_argument(
        "--output-dir", default="demo_output", help="where the heatmap and SavedModel go"
    )
    parser.add_argument(
        "--no-export",
        dest="export",
        action="store_false",
        help="skip the TensorFlow SavedModel export",
    )
    parser.add_argument(
        "--backend",
        choices=["tensorflow", "jax", "torch"],
        help="Keras backend (default: $KERAS_BACKEND, else Keras' configured one)",
    )
    return parser.parse_args(argv)


def build(args, data):
    import keras

    from keras_luong import LuongSeq2Seq

    model = LuongSeq2Seq(
        len(data["source_vocabulary"]),
        len(data["target_vocabulary"]),
        units=args.units,
        embedding_dim=64,
        alignment=args.alignment,
        score_mode=args.score_mode,
        window=args.window,
        max_source_length=data["train"]["source"].shape[1],
        input_feeding=args.input_feeding,
    )
    steps = args.epochs * (len(data["train"]["source"]) // args.batch_size)
    model.compile(
        optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(3e-3, steps)),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def evaluate(model, split, max_length):
    """Exact match of greedy decoding; alignment accuracy and AER of teacher-forced weights."""
    import keras
    import numpy as np

    from keras_luong.datasets import dates

    generated = model.generate(split["source"], max_length=max_length)
    exact = float(np.mean(np.all(generated == split["target_out"], axis=1)))
    _, weights = model(
        (split["source"], split["target_in"]), training=False, return_attention_scores=True
    )
    accuracy, aer = dates.alignment_scores(
        keras.ops.convert_to_numpy(weights), split["gold"], split["sure"]
    )
    return exact, accuracy, aer, generated


def export(model, args, path, max_length):
    import keras

    if keras.backend.backend() != "torch":
        model.export_generator(path, max_length=max_length)
        return
    # torch cannot export: save .keras, load it on TensorFlow in a subprocess, export there.
    keras_path = os.path.join(args.output_dir, "model.keras")
    model.save(keras_path)
    script = textwrap.dedent(
        f"""
        import keras, keras_luong
        keras.saving.load_model({keras_path!r}).export_generator({path!r}, {max_length})
        """
    )
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    subprocess.run([sys.executable, "-c", script], env=env, check=True)


def main(argv=None):
    args = parse_args(argv)
    import keras
    import numpy as np

    if args.backend and args.backend != keras.backend.backend():
        # Keras fixes its backend at import (importing keras_luong imported it): start again.
        env = dict(os.environ, KERAS_BACKEND=args.backend)
        argv = sys.argv[1:] if argv is None else argv
        os.execve(sys.executable, [sys.executable, "-m", "keras_luong.demo", *argv], env)

    from keras_luong.datasets import dates
    from keras_luong.plotting import plot_attention
    from keras_luong.samplers import BeamSearchSampler

    started = time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}")
    data = dates.load_data(args.examples, seed=args.seed)
    train, validation, test = data["train"], data["validation"], data["test"]
    max_length = dates.TARGET_LENGTH
    print(
        f"dates: {len(train['source'])} train, {len(validation['source'])} validation, "
        f"{len(test['source'])} test; {len(dates.LOCALES)} locales x {len(dates.FORMATS)} "
        f"formats; source vocabulary {len(data['source_vocabulary'])} characters"
    )
    model = build(args, data)
    variant = f"{args.alignment}/{args.score_mode}, input feeding {args.input_feeding}"
    print(f"LuongSeq2Seq ({variant})")
    model.fit(
        (train["source"], train["target_in"]),
        train["target_out"],
        validation_data=((validation["source"], validation["target_in"]), validation["target_out"]),
        batch_size=args.batch_size,
        epochs=args.epochs,
        verbose=1 if sys.stdout.isatty() else 2,
    )
    trained = time.perf_counter() - started

    exact, accuracy, aer, generated = evaluate(model, test, max_length)
    print(f"\nheld-out test ({len(test['source'])} dates), after {trained:.0f}s:")
    print(f"  exact match (greedy)   {exact:.2%}")
    print(f"  alignment accuracy     {accuracy:.2%}")
    print(f"  AER                    {aer:.3f}")

    target = dates.TARGET_VOCABULARY
    wrong = np.flatnonzero(np.any(generated != test["target_out"], axis=1))[:5]
    if len(wrong):
        print("  some mistakes:")
    for i in wrong:
        example = test["examples"][i]
        print(
            f"    {example['source']!r} ({example['locale']}, {example['format']}) -> "
            f"{target.decode(generated[i])}, reference {example['target']}"
        )
    few = slice(0, 6)
    beam_settings = {"num_beams": args.beam_width, "length_penalty": args.length_penalty}
    beam = model.generate(
        test["source"][few], max_length, sampler=BeamSearchSampler(**beam_settings)
    )
    print(f"\n{'source':<34} {'greedy':<12} {f'beam ({args.beam_width})':<12} reference")
    for i, example in enumerate(test["examples"][few]):
        print(
            f"{example['source']:<34} {target.decode(generated[i]):<12} "
            f"{target.decode(beam[i]):<12} {example['target']}"
        )
    # The n best hypotheses for one input (a mistake, if greedy made one), with their scores.
    index = int(wrong[0]) if len(wrong) else 0
    ids, scores = model.generate(
        test["source"][index : index + 1],
        max_length,
        sampler=BeamSearchSampler(**beam_settings, return_all_beams=True),
    )
    example = test["examples"][index]
    print(f"\n{args.beam_width}-best for {example['source']!r} (reference {example['target']}):")
    for rank, (hypothesis, score) in enumerate(zip(ids[0], scores[0], strict=True), 1):
        print(f"  {rank}. {target.decode(hypothesis):<12} score {score:.3f}")

    os.makedirs(args.output_dir, exist_ok=True)
    # The model's own output and the alignments it decoded it with.
    example = test["examples"][0]
    ids, weights = model.generate(test["source"][:1], max_length, return_attention_scores=True)
    output = target.decode(ids[0])
    ended = ["</s>"] if dates.END in ids[0] else []  # else it ran to max_length
    heatmap = os.path.join(args.output_dir, "attention.png")
    plot_attention(
        weights[0],
        list(example["source"]),
        list(output) + ended,
        path=heatmap,
        title=f"{example['locale']} {example['format']}: {output} ({variant})",
    )
    print(f"\nattention heatmap: {heatmap}")
    if args.export:
        path = os.path.join(args.output_dir, "saved_model")
        export(model, args, path, max_length)
        print(f"SavedModel (serve: int32 source ids -> target ids): {path}")
    print(f"total {time.perf_counter() - started:.0f}s")
    if not np.isfinite(exact):
        raise SystemExit("evaluation failed")


if __name__ == "__main__":
    main()
