"""`python -m keras_luong.evaluate`: BLEU and chrF of a translated file, by sacreBLEU.

    python -m keras_luong.evaluate --references test.de < test.hyp

reads the hypotheses one a line (standard input, or `--hypotheses`), aligned with each
`--references` file (give it once per reference set), and prints corpus BLEU with its
brevity penalty and length ratio, chrF, and sacreBLEU's signature of the BLEU settings.
"""

import argparse
import sys


def build_parser():
    """The command line's arguments (also the source of its page in the guide)."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_luong.evaluate",
        description="Score translations against references with sacreBLEU: corpus BLEU, its "
        "brevity penalty and length ratio, chrF, and the BLEU signature.",
    )
    parser.add_argument(
        "--hypotheses", default="-", help="the translations, one a line; default: stdin"
    )
    parser.add_argument(
        "--references",
        action="append",
        required=True,
        help="a reference file aligned with the hypotheses (repeat for several)",
    )
    parser.add_argument(
        "--tokenize",
        default="13a",
        help="sacreBLEU's tokenizer: 13a (the default) for raw text, none for text "
        "tokenized already (then BLEU is multi-bleu.perl's), intl, ...",
    )
    parser.add_argument("--lowercase", action="store_true", help="lowercase both sides first")
    return parser


def main(argv=None):
    """Runs the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)

    from keras_luong.data.parallel_text import read_lines
    from keras_luong.evaluation import bleu_signature, corpus_bleu, corpus_chrf

    try:
        hypotheses = read_lines("hypotheses", args.hypotheses)
        sets = [read_lines("references", file) for file in args.references]
        for file, references in zip(args.references, sets, strict=True):
            if len(references) != len(hypotheses):
                raise ValueError(
                    f"Expected as many references as hypotheses. Received: {len(hypotheses)} "
                    f"hypotheses and {len(references)} lines in {file}"
                )
        references = [list(row) for row in zip(*sets, strict=True)]
        bleu = corpus_bleu(
            hypotheses, references, args.tokenize, args.lowercase, return_details=True
        )
        chrf = corpus_chrf(hypotheses, references)
        signature = bleu_signature(args.tokenize, args.lowercase, len(sets))
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    print(
        f"BLEU = {bleu.score:.2f} (brevity penalty {bleu.brevity_penalty:.3f}, length ratio "
        f"{bleu.length_ratio:.3f}, {bleu.hypothesis_length} / {bleu.reference_length} tokens)"
    )
    print(f"chrF = {chrf:.2f}")
    print(f"BLEU signature: {signature}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
