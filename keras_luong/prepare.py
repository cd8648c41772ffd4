"""`python -m keras_luong.prepare`: a parallel corpus prepared once on disk for training.

    python -m keras_luong.prepare --source train.en.gz --target train.de.gz --out wmt14 \\
        --vocabulary-size 32000 --max-words 50

writes the folder `keras_luong.data.prepared.PreparedCorpus` opens (see
`prepare_corpus` for what each option does).
"""

import argparse
import sys


def build_parser():
    """The command line's arguments (also the source of its page in the guide)."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_luong.prepare",
        description="Prepare a parallel corpus once on disk: train a subword vocabulary on a "
        "sample, encode both sides a chunk at a time, and write flat id files that "
        "keras_luong.data.batching.BucketedBatches reads a batch at a time.",
    )
    parser.add_argument("--source", required=True, help="source text, a sentence a line (.gz ok)")
    parser.add_argument("--target", required=True, help="target text, aligned with --source")
    parser.add_argument("--out", required=True, help="the folder to write")
    parser.add_argument("--vocabulary-size", type=int, default=8000, help="default: 8000")
    parser.add_argument(
        "--vocabulary", help="encode with this saved vocabulary (JSON) instead of training one"
    )
    parser.add_argument("--model-type", choices=("bpe", "unigram"), default="bpe")
    parser.add_argument(
        "--sample-size",
        type=int,
        default=1_000_000,
        help="sentences the vocabulary is trained on (default: 1000000)",
    )
    parser.add_argument(
        "--max-words", type=int, help="leave out pairs with more words on either side"
    )
    parser.add_argument("--chunk-size", type=int, default=100_000, help="pairs encoded at a time")
    parser.add_argument("--seed", type=int, default=0, help="seed of the vocabulary's sample")
    parser.add_argument("--threads", type=int, help="SentencePiece threads (default: all CPUs)")
    parser.add_argument("--overwrite", action="store_true", help="replace a prepared corpus")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    from keras_luong.data.prepared import prepare_corpus

    try:
        prepare_corpus(
            args.source,
            args.target,
            args.out,
            vocabulary_size=args.vocabulary_size,
            vocabulary=args.vocabulary,
            model_type=args.model_type,
            sample_size=args.sample_size,
            max_words=args.max_words,
            chunk_size=args.chunk_size,
            seed=args.seed,
            num_threads=args.threads,
            overwrite=args.overwrite,
            verbose=0 if args.quiet else 1,
        )
    except ValueError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
