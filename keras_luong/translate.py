"""`python -m keras_luong.translate`: a file, or standard input, translated by a saved model.

    python -m keras_luong.translate --model model.keras --beam 5 < test.en > test.hyp

reads one sentence a line and writes one translation a line, in the same order. The model is
a `.keras` file saved with its vocabularies (`set_vocabularies`). A progress bar goes to
standard error when it is a terminal.
"""

import argparse
import contextlib
import os
import sys


def build_parser():
    """The command line's arguments (also the source of its page in the guide)."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_luong.translate",
        description="Translate one sentence a line with a saved keras-luong model (a .keras "
        "file saved with its vocabularies), greedily or by beam search.",
    )
    parser.add_argument(
        "--model",
        required=True,
        nargs="+",
        help="the .keras file; several decode as one ensemble (keras_luong.Ensemble, their "
        "log-probabilities averaged at every step)",
    )
    parser.add_argument(
        "--input", default="-", help="source text, a sentence a line (.gz ok); default: stdin"
    )
    parser.add_argument("--output", default="-", help="where to write; default: stdout")
    parser.add_argument(
        "--beam", type=int, default=1, help="beam size; 1 (the default) decodes greedily"
    )
    parser.add_argument(
        "--length-penalty",
        type=float,
        default=1.0,
        help="beam search's length penalty alpha: scores divided by GNMT's "
        "((5 + length) / 6) ** alpha (default: 1.0)",
    )
    parser.add_argument(
        "--min-length",
        type=int,
        default=0,
        help="tokens a translation has at least before its end token (default: 0)",
    )
    parser.add_argument(
        "--ban-unk", action="store_true", help="never generate the unknown token (id 3)"
    )
    parser.add_argument(
        "--sample",
        type=sampling_argument,
        metavar="random|topk:K|topp:P",
        help="draw each token from the model's distribution (random), among its K most "
        "probable tokens (topk:K) or from its nucleus of probability P (topp:P), in place of "
        "greedy decoding or beam search",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="with --sample: the logits divided by this before the softmax (default: 1.0)",
    )
    parser.add_argument(
        "--seed", type=int, help="with --sample: the seed of the draws (default: new ones)"
    )
    parser.add_argument(
        "--max-length",
        type=int,
        help="most tokens per translation (default: 1.5 x its source tokens + 10)",
    )
    parser.add_argument(
        "--max-length-ratio",
        type=float,
        nargs=2,
        metavar=("A", "B"),
        default=(1.5, 10),
        help="without --max-length, each translation has at most A x its source tokens + B "
        "(default: 1.5 10)",
    )
    parser.add_argument(
        "--score",
        metavar="TARGET",
        help="score this file's translations (one a line, beside --input's sentences) "
        "instead of translating: write each one's log-probability given its source",
    )
    parser.add_argument(
        "--prefix",
        metavar="FILE",
        help="a line for each input line that its translation begins with (empty: none)",
    )
    parser.add_argument(
        "--n-best",
        type=int,
        default=1,
        help="with --beam K: write the N best translations of each sentence (N <= K), "
        "best first, a line each as 'score<TAB>translation' (default: 1, the best alone)",
    )
    parser.add_argument(
        "--alignments",
        action="store_true",
        help="write each translation's alignment after it, ' ||| ' then Pharaoh pairs 'i-j' "
        "(source token i, target token j, from 0; OpenNMT-py's -report_align): each target "
        "token's link to the source token its attention weights are largest on",
    )
    parser.add_argument(
        "--token-scores",
        action="store_true",
        help="write each translation's token scores after it, ' ||| ' then the "
        "log-probability of each token and of the end token (fairseq's positional scores; "
        "none for the end of a translation cut at its length bound)",
    )
    parser.add_argument(
        "--replace-unk",
        action="store_true",
        help="write each unknown target token as the source token its attention weights are "
        "largest on (OpenNMT-py's -replace_unk)",
    )
    parser.add_argument(
        "--phrase-table",
        metavar="FILE",
        help="with --replace-unk: 'source|||target' lines, what to write for a source token "
        "in place of copying it",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='write one JSON object a sentence: {"translation": ...}, with --n-best also '
        '"n_best": [{"translation": ..., "score": ...}, ...], with --alignments an '
        '"alignment" of each, with --token-scores their "tokens", "token_scores" and '
        '"end_score"',
    )
    parser.add_argument("--batch-size", type=int, default=32, help="default: 32")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("beam", "batch_size", "max_length", "n_best"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1. Received: {value}")
    if args.min_length < 0:
        parser.error(f"--min-length must be at least 0. Received: {args.min_length}")
    if args.n_best > args.beam:
        parser.error(
            f"--n-best {args.n_best} needs a beam of at least as many: give --beam {args.n_best}"
            f" or more. Received: --beam {args.beam}"
        )
    if args.phrase_table is not None and not args.replace_unk:
        parser.error("--phrase-table is read with --replace-unk: give both")
    if args.sample is not None and args.beam > 1:
        parser.error(f"--sample draws one translation: give it without --beam {args.beam}")

    import keras

    import keras_luong
    from keras_luong.data.parallel_text import read_lines

    for name in keras_luong.__all__:  # registers every class, for load_model
        getattr(keras_luong, name)

    try:
        texts = read_lines("input", args.input)
        models = [load_model(keras, path) for path in args.model]
        model = models[0] if len(models) == 1 else keras_luong.Ensemble(models)
        if args.score is not None:
            return write_scores(args, model, texts, read_lines("score", args.score))
        bans = {"min_length": args.min_length, "banned_token_ids": (3,) if args.ban_unk else ()}
        sampler = keras_luong.GreedySampler(**bans)
        if args.sample is not None:
            sampler = keras_luong.RandomSampler(
                **args.sample, temperature=args.temperature, seed=args.seed, **bans
            )
        elif args.beam > 1:
            sampler = keras_luong.BeamSearchSampler(
                args.beam,
                length_penalty=args.length_penalty,
                return_all_beams=args.n_best > 1,
                **bans,
            )
        prefixes = None if args.prefix is None else read_lines("prefix", args.prefix)
        verbose = int(not args.quiet and sys.stderr.isatty())
        with contextlib.redirect_stdout(sys.stderr):  # the progress bar, apart from the text
            translations = model.translate(
                texts,
                max_length=args.max_length,
                length_bound=(args.max_length_ratio[0], int(args.max_length_ratio[1])),
                sampler=sampler,
                batch_size=args.batch_size,
                verbose=verbose,
                prefixes=prefixes,
                return_alignments=args.alignments,
                return_token_scores=args.token_scores,
                replace_unk=args.replace_unk,
                phrase_table=args.phrase_table,
            )
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    output = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with output if output is not sys.stdout else contextlib.nullcontext():
        alignments = token_scores = [None] * len(texts)
        if args.alignments and args.token_scores:
            translations, alignments, token_scores = translations
        elif args.alignments:
            translations, alignments = translations
        elif args.token_scores:
            translations, token_scores = translations
        output.writelines(output_lines(args, translations, alignments, token_scores))
    return 0


def output_lines(args, translations, alignments, token_scores):
    """The lines written for `translations`: a translation a line; with `--n-best N`, N lines
    a sentence (score, a tab, the translation); with `--json`, an object a line; with
    `--alignments`, each translation's Pharaoh pairs after it, then with `--token-scores`
    its token scores."""
    import json

    def dumps(record):
        return json.dumps(record, ensure_ascii=False)

    for translation, alignment, token_score in zip(
        translations, alignments, token_scores, strict=True
    ):
        if args.n_best == 1:
            best, aligned, scored = [(translation, None)], [alignment], [token_score]
        else:
            best = translation[: args.n_best]
            aligned = alignment[: args.n_best] if args.alignments else [None] * len(best)
            scored = token_score[: args.n_best] if args.token_scores else [None] * len(best)
        records = []
        for (text, score), found, tokens in zip(best, aligned, scored, strict=True):
            record = {"translation": text}
            if score is not None:
                record["score"] = float(score)
            if found is not None:
                record["alignment"] = found.pharaoh()
            if tokens is not None:
                record["tokens"] = tokens.tokens
                record["token_scores"] = [round(float(s), 4) for s in tokens.scores]
                record["end_score"] = (
                    None if tokens.end_score is None else round(tokens.end_score, 4)
                )
            records.append(record)
        if args.json:
            extra = {"n_best": records} if args.n_best > 1 else {}
            yield dumps({**records[0], **extra}) + "\n"
            continue
        for record in records:
            line = record["translation"]
            if args.alignments:
                line = f"{line} ||| {record['alignment']}"
            if args.token_scores:
                ends = [] if record["end_score"] is None else [record["end_score"]]
                line += " ||| " + " ".join(f"{s:.4f}" for s in record["token_scores"] + ends)
            yield (line if args.n_best == 1 else f"{record['score']:.4f}\t{line}") + "\n"


def sampling_argument(text):
    """`--sample`: `random`, `topk:K` or `topp:P`, as `RandomSampler`'s arguments."""
    kind, _, value = text.partition(":")
    try:
        if kind == "random" and not value:
            return {}
        if kind == "topk":
            return {"top_k": int(value)}
        if kind == "topp":
            return {"top_p": float(value)}
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"expected random, topk:K or topp:P. Received: {text!r}")


def write_scores(args, model, texts, targets):
    """`--score`: each target's log-probability given its source, one a line."""
    import keras

    def pad_sequences(id_lists):  # at least one column, 0 after each row's ids
        width = max(1, max(map(len, id_lists), default=1))
        return keras.utils.pad_sequences(id_lists, maxlen=width, padding="post")

    if len(targets) != len(texts):
        raise ValueError(
            f"Invalid value for --score: {len(targets)} lines for {len(texts)} source lines. "
            f"Received: {args.score!r}"
        )
    if getattr(model, "source_vocabulary", None) is None:
        raise ValueError(
            f"Invalid value for --model: {' '.join(args.model)} has no vocabularies (see "
            "set_vocabularies)"
        )
    scores = []
    for start in range(0, len(texts), args.batch_size):
        rows = slice(start, start + args.batch_size)
        ids = [
            pad_sequences([vocabulary.encode(t) for t in lines[rows]])
            for vocabulary, lines in (
                (model.source_vocabulary, texts),
                (model.target_vocabulary, targets),
            )
        ]
        scores.extend(model.score(*ids, batch_size=args.batch_size).tolist())
    output = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with output if output is not sys.stdout else contextlib.nullcontext():
        output.writelines(f"{score:.4f}\n" for score in scores)
    return 0


def load_model(keras, path):
    """The model of a `.keras` file, or a `ValueError` naming the file."""
    if not os.path.isfile(path):
        raise ValueError(f"Invalid value for --model: no such file. Received: {path!r}")
    try:
        model = keras.saving.load_model(path)
    except Exception as error:  # Keras raises several kinds on a file that is not a model
        raise ValueError(
            f"Invalid value for --model: Keras cannot load {path!r} as a model ({error})"
        ) from None
    if not hasattr(model, "translate"):
        raise ValueError(
            f"Invalid value for --model: {path!r} holds a {type(model).__name__}, not a "
            "keras-luong translation model"
        )
    return model


if __name__ == "__main__":
    sys.exit(main())
