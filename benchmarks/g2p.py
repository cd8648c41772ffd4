"""Grapheme-to-phoneme on CMUdict (g014b2b): train a LuongSeq2Seq, score it as the papers do.

    make g2p                                   # the headline run (jax)
    python -m benchmarks.g2p --minutes 10 --alignment local-p --no-input-feeding

Trains on the training file less a validation split, measures the validation WER (greedy)
after every epoch and keeps the best weights, stops after `--epochs` or `--minutes`, picks
the length penalty of beam search on the validation words, then prints test PER and WER for
greedy and beam search next to the published rows, and saves the model and its two
vocabularies (JSON) in `--output-dir`. `--json` also writes the results file docs/g2p.md
quotes: the validation curve (its rows), the test table beside the published rows, and the
figures.
"""

import argparse
import json
import os
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--alignment",
        default="global",
        choices=["global", "local-m", "local-p", "hard-monotonic"],
    )
    parser.add_argument(
        "--score-mode", default="general", choices=["dot", "general", "concat", "additive"]
    )
    parser.add_argument(
        "--attention-timing",
        default="luong",
        choices=["luong", "bahdanau"],
        help="Luong's decoder, or Bahdanau, Cho and Bengio's (attend with s_(t-1))",
    )
    parser.add_argument("--window", type=int, default=5, help="local window half-width D")
    parser.add_argument("--no-input-feeding", dest="input_feeding", action="store_false")
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--layers", type=int, default=1, help="decoder LSTM layers")
    parser.add_argument("--embedding-dim", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=60.0, help="training time budget")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--beam-width", type=int, default=5)
    parser.add_argument(
        "--length-penalties",
        default="0,0.5,1,1.5",
        help="comma-separated alphas tried on the validation words",
    )
    parser.add_argument("--validation-size", type=int, default=2000)
    parser.add_argument("--max-train-words", type=int, help="train on fewer words (quick runs)")
    parser.add_argument("--test-words", type=int, help="score only the first N test words")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default="g2p_output")
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    parser.add_argument(
        "--backend", choices=["tensorflow", "jax", "torch"], help="default: $KERAS_BACKEND"
    )
    return parser.parse_args(argv)


def decode(model, source, vocabulary, max_length, **settings):
    generated = model.generate(source, max_length, **settings)
    return [vocabulary.decode(ids).split() for ids in generated]


def scores(model, split, vocabulary, max_length, **settings):
    from keras_luong.evaluation import phoneme_error_rate, word_error_rate

    hypotheses = decode(model, split["source"], vocabulary, max_length, **settings)
    references = [[r.split() for r in refs] for refs in split["references"]]
    return phoneme_error_rate(hypotheses, references), word_error_rate(hypotheses, references)


def plot_examples(model, letters, phonemes, max_length, path, words=("KNIGHT", "BOX", "XYLOPHONE")):
    """Heatmaps of letters against the phonemes the model outputs (silent letters, `X` read
    as `K S` or `Z`), side by side in one figure saved at `path`."""
    from matplotlib.figure import Figure

    from keras_luong.plotting import plot_attention

    ids, weights = model.generate(
        letters.encode_batch(list(words)), max_length, return_attention_scores=True
    )
    figure = Figure(figsize=(4.2 * len(words), 4.2))
    for i, word in enumerate(words):
        output = phonemes.decode(ids[i]).split()
        ended = ["</s>"] if phonemes.END in ids[i] else []
        ax = figure.add_subplot(1, len(words), i + 1)
        plot_attention(weights[i], list(word), output + ended, ax=ax, title=word)
    figure.savefig(path, dpi=110)


def main(argv=None):
    args = parse_args(argv)
    if args.backend and os.environ.get("KERAS_BACKEND") != args.backend:
        env = dict(os.environ, KERAS_BACKEND=args.backend)
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    import keras

    from keras_luong import BeamSearchSampler, LuongSeq2Seq
    from keras_luong.datasets import cmudict

    keras.utils.set_random_seed(args.seed)
    data = cmudict.load_data(args.validation_size, args.seed, args.max_train_words)
    train, validation, test = data["train"], data["validation"], data["test"]
    if args.test_words:
        test = {k: v[: args.test_words] for k, v in test.items()}
    letters, phonemes = data["letter_vocabulary"], data["phoneme_vocabulary"]
    max_length = data["target_length"]
    print(
        f"keras {keras.__version__}, backend {keras.backend.backend()}; CMUdict g014b2b: "
        f"{len(train['source'])} training entries, {len(validation['words'])} validation "
        f"words, {len(test['words'])} test words; {len(letters)} letter ids, "
        f"{len(phonemes)} phoneme ids"
    )
    model = LuongSeq2Seq(
        len(letters),
        len(phonemes),
        units=args.units,
        embedding_dim=args.embedding_dim,
        alignment=args.alignment,
        score_mode=args.score_mode,
        window=args.window,
        input_feeding=args.input_feeding,
        attention_timing=args.attention_timing,
        decoder_layers=args.layers,
        dropout=args.dropout,
        start_token=phonemes.START,
        end_token=phonemes.END,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate, clipnorm=5.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    recipe = (
        f"{args.alignment}/{args.score_mode}"
        + (f" D={args.window}" if args.alignment != "global" else "")
        + (
            ", Bahdanau's decoder"
            if args.attention_timing == "bahdanau"
            else f", input feeding {'on' if args.input_feeding else 'off'}"
        )
        + ", biLSTM encoder, "
        f"{args.layers}x{args.units} decoder, embeddings {args.embedding_dim}, dropout "
        f"{args.dropout}, Adam {args.learning_rate} (halved when validation WER stalls), "
        f"batch {args.batch_size}"
    )
    print(recipe)

    started = time.perf_counter()
    curve, best, halvings = [], (float("inf"), None, 0), []
    for epoch in range(1, args.epochs + 1):
        model.fit(
            (train["source"], train["target_in"]),
            train["target_out"],
            batch_size=args.batch_size,
            epochs=1,
            verbose=1 if sys.stdout.isatty() else 2,
        )
        per, wer = scores(model, validation, phonemes, max_length)
        minutes = (time.perf_counter() - started) / 60
        curve.append({"epoch": epoch, "minutes": round(minutes, 1), "wer": wer, "per": per})
        print(f"epoch {epoch}: validation WER {wer:.2%} PER {per:.2%} ({minutes:.1f} min)")
        if wer < best[0]:
            best = (wer, model.get_weights(), epoch)
        elif epoch - best[2] >= 2:
            rate = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) / 2
            model.optimizer.learning_rate.assign(rate)
            halvings.append(epoch)
            print(f"  validation WER stalled: learning rate {rate:g}")
        if minutes * (1 + 1 / epoch) > args.minutes:  # another epoch would overrun
            break
    model.set_weights(best[1])
    print(f"best epoch {best[2]}: validation WER {best[0]:.2%}")

    def beam(alpha):
        return {"sampler": BeamSearchSampler(args.beam_width, length_penalty=alpha)}

    alphas = [float(a) for a in args.length_penalties.split(",")]
    by_alpha = {}
    for alpha in alphas:
        by_alpha[alpha] = scores(model, validation, phonemes, max_length, **beam(alpha))
        print(f"beam {args.beam_width}, length penalty {alpha:g}: validation WER "
              f"{by_alpha[alpha][1]:.2%} PER {by_alpha[alpha][0]:.2%}")  # fmt: skip
    alpha = min(alphas, key=lambda a: by_alpha[a][1])
    greedy_test = scores(model, test, phonemes, max_length)
    beam_test = scores(model, test, phonemes, max_length, **beam(alpha))

    rows = [
        ("ours, greedy", *greedy_test),
        (f"ours, beam {args.beam_width} (length penalty {alpha:g})", *beam_test),
    ]
    print(f"\ntest ({len(test['words'])} words), {recipe}, {best[2]} epochs")
    print(f"{'system':<76} {'PER %':>6} {'WER %':>6}")
    for name, per, wer in rows:
        print(f"{name:<76} {per * 100:6.2f} {wer * 100:6.2f}")
    from benchmarks import published

    for name, per, wer in published.CMUDICT:
        per = f"{per:6.2f}" if per is not None else f"{'-':>6}"
        print(f"{name:<76} {per} {wer:6.2f}")

    os.makedirs(args.output_dir, exist_ok=True)
    plot_examples(
        model, letters, phonemes, max_length, os.path.join(args.output_dir, "attention.png")
    )
    model.save(os.path.join(args.output_dir, "g2p.keras"))
    letters.save(os.path.join(args.output_dir, "letters.json"))
    phonemes.save(os.path.join(args.output_dir, "phonemes.json"))
    with open(os.path.join(args.output_dir, "results.json"), "w") as f:
        json.dump(
            {
                "recipe": recipe,
                "curve": curve,
                "best_epoch": best[2],
                "validation_beam": {str(a): by_alpha[a] for a in alphas},
                "test": {name: {"per": per, "wer": wer} for name, per, wer in rows},
            },
            f,
            indent=1,
        )
    print(f"saved the model, its vocabularies and results.json in {args.output_dir}")
    if args.json:
        splits = {"train": train, "validation": validation, "test": test}
        write_json(args, curve, best[2], halvings, by_alpha, alpha, rows, splits)


# The results file's tables: the test table's columns (key, header, aligned right), and the
# curve's (key, label), rendered across the page (`<!-- results rows: g2p -->`).
TEST_COLUMNS = (("system", "system", False), ("per", "PER %", True), ("wer", "WER %", True))
CURVE_COLUMNS = (("epoch", "epoch"), ("wer", "WER %"), ("minutes", "minutes"))


def write_json(args, curve, best_epoch, halvings, by_alpha, alpha, rows, splits):
    """The run's results file: the validation curve as its rows, the test table (ours, then
    the published rows) and the figures the page quotes, percentages with two decimals."""
    from benchmarks import published
    from benchmarks.harness import write_results

    def percent(x):
        return f"{100 * x:.2f}"

    def slug(alpha):
        return f"{alpha:g}".replace(".", "_")

    test = [{"system": name, "per": percent(per), "wer": percent(wer)} for name, per, wer in rows]
    test += [
        {"system": name, "per": "–" if per is None else f"{per:.2f}", "wer": f"{wer:.2f}"}
        for name, per, wer in published.CMUDICT
    ]
    (greedy_per, greedy_wer), (beam_per, beam_wer) = [r[1:] for r in rows]
    best = curve[best_epoch - 1]
    figures = {
        "greedy_per": percent(greedy_per),
        "greedy_wer": percent(greedy_wer),
        "beam_per": percent(beam_per),
        "beam_wer": percent(beam_wer),
        "length_penalty": f"{alpha:g}",
        "epochs": str(len(curve)),
        "best_epoch": str(best_epoch),
        "minutes": f"{curve[-1]['minutes']:.1f}",
        "minutes_per_epoch": f"{curve[-1]['minutes'] / len(curve):.1f}",
        "validation_greedy_wer": percent(best["wer"]),
        "validation_greedy_per": percent(best["per"]),
        "halvings": ", ".join(map(str, halvings)) or "none",
        "training_entries": f"{len(splits['train']['source']):,}",
        "validation_words": f"{len(splits['validation']['words']):,}",
        "test_words": f"{len(splits['test']['words']):,}",
    }
    # The published Luong-attention model (Toshniwal & Livescu's single model).
    (luong,) = [row for row in published.CMUDICT if "Luong global attention" in row[0]]
    figures["published_luong_per"], figures["published_luong_wer"] = (
        f"{luong[1]:.2f}",
        f"{luong[2]:.2f}",
    )
    for a, (per, wer) in by_alpha.items():
        figures[f"validation_beam_wer_{slug(a)}"] = percent(wer)
        figures[f"validation_beam_per_{slug(a)}"] = percent(per)
    settings = {
        "budget_minutes": f"{args.minutes:g}",
        "beam_width": str(args.beam_width),
        "seed": str(args.seed),
        "units": str(args.units),
        "batch_size": str(args.batch_size),
    }
    write_results(
        args.json,
        [
            {"epoch": str(p["epoch"]), "wer": percent(p["wer"]), "minutes": f"{p['minutes']:.1f}"}
            for p in curve
        ],
        columns=CURVE_COLUMNS,
        settings=settings,
        figures=figures,
        tables={"test": {"columns": TEST_COLUMNS, "rows": test}},
    )


if __name__ == "__main__":
    main()
