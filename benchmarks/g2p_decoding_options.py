"""What the coverage penalty and n-gram blocking change on grapheme-to-phoneme: a model saved
by `make g2p` (or benchmarks/g2p.py --output-dir DIR) decoded with beam search, with and
without each option, scored on the test words as benchmarks/g2p.py scores them.

    KERAS_BACKEND=jax python -m benchmarks.g2p_decoding_options g2p_output [--test-words N] \
        [--json FILE]

`--json FILE` writes the results file a page quotes: a row per setting, its PER and WER (%)
also as figures (`as_is_wer`, `coverage_penalty_0_2_per`, ...), in the table `options`.
"""

import argparse
import os

import keras

from benchmarks import g2p
from keras_luong import BeamSearchSampler
from keras_luong.data.vocabulary import Vocabulary
from keras_luong.datasets import cmudict


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--test-words", type=int)
    parser.add_argument("--beams", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the results to this file")
    args = parser.parse_args(argv)
    model = keras.saving.load_model(os.path.join(args.model_dir, "g2p.keras"))
    phonemes = Vocabulary.load(os.path.join(args.model_dir, "phonemes.json"))
    data = cmudict.load_data()
    test = data["test"]
    if args.test_words:
        test = {k: v[: args.test_words] for k, v in test.items()}
    settings = {
        "as is": {},
        "`coverage_penalty=0.2`": {"coverage_penalty": 0.2},
        "`coverage_penalty=1.0`": {"coverage_penalty": 1.0},
        "`no_repeat_ngram_size=2`": {"no_repeat_ngram_size": 2},
        "`no_repeat_ngram_size=3`": {"no_repeat_ngram_size": 3},
    }
    print(f"{len(test['words'])} test words; PER % and WER % with beam {args.beams}")
    scores = {}
    for name, options in settings.items():
        sampler = BeamSearchSampler(args.beams, **options)
        scores[name] = g2p.scores(model, test, phonemes, data["target_length"], sampler=sampler)
        print(f"{name:28s} PER {100 * scores[name][0]:6.2f}  WER {100 * scores[name][1]:6.2f}")
    if args.json:
        write_json(args, scores, len(test["words"]))


def write_json(args, scores, test_words):
    """The results file: a row per setting (`scores`: name -> (PER, WER) as fractions)."""
    from benchmarks import harness

    rows, figures = [], {}
    for name, (per, wer) in scores.items():
        rows.append({"setting": name, "per": f"{100 * per:.2f}", "wer": f"{100 * wer:.2f}"})
        key = harness.figure_key(name)
        figures[f"{key}_per"], figures[f"{key}_wer"] = rows[-1]["per"], rows[-1]["wer"]
    columns = [("setting", f"beam {args.beams}", False), ("per", "PER %", True)]
    columns.append(("wer", "WER %", True))
    settings = {
        "model_dir": args.model_dir,
        "beams": str(args.beams),
        "test_words": str(test_words),
        # Every row decodes at the sampler's default length penalty.
        "length_penalty": str(BeamSearchSampler(args.beams).length_penalty),
    }
    tables = {"options": {"columns": columns}}
    harness.write_results(args.json, rows, figures=figures, settings=settings, tables=tables)


if __name__ == "__main__":
    main()
