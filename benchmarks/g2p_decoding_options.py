"""What the coverage penalty and n-gram blocking change on grapheme-to-phoneme: a model saved
by `make g2p` (or benchmarks/g2p.py --output-dir DIR) decoded with beam search, with and
without each option, scored on the test words as benchmarks/g2p.py scores them.

    KERAS_BACKEND=jax python -m benchmarks.g2p_decoding_options g2p_output [--test-words N]
"""

import argparse
import os

import keras

from benchmarks import g2p
from keras_luong import BeamSearchSampler
from keras_luong.data.vocabulary import Vocabulary
from keras_luong.datasets import cmudict


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--test-words", type=int)
    parser.add_argument("--beams", type=int, default=5)
    args = parser.parse_args()
    model = keras.saving.load_model(os.path.join(args.model_dir, "g2p.keras"))
    phonemes = Vocabulary.load(os.path.join(args.model_dir, "phonemes.json"))
    data = cmudict.load_data()
    test = data["test"]
    if args.test_words:
        test = {k: v[: args.test_words] for k, v in test.items()}
    settings = {
        f"beam {args.beams}": {},
        "coverage_penalty=0.2": {"coverage_penalty": 0.2},
        "coverage_penalty=1.0": {"coverage_penalty": 1.0},
        "no_repeat_ngram_size=2": {"no_repeat_ngram_size": 2},
        "no_repeat_ngram_size=3": {"no_repeat_ngram_size": 3},
    }
    print(f"{len(test['words'])} test words; PER % and WER % with beam {args.beams}")
    for name, options in settings.items():
        sampler = BeamSearchSampler(args.beams, **options)
        per, wer = g2p.scores(model, test, phonemes, data["target_length"], sampler=sampler)
        print(f"{name:28s} PER {100 * per:6.2f}  WER {100 * wer:6.2f}")


if __name__ == "__main__":
    main()
