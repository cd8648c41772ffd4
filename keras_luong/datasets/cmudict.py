"""Grapheme-to-phoneme on the CMU Pronouncing Dictionary: the g014b2b benchmark split.

The standard train/test split of the G2P literature (Phonetisaurus' `g014b2b`; Yao & Zweig
2015, Toshniwal & Livescu 2016, ...): 113,438 training entries (106,837 words) and 12,753 test
entries (12,000 words), upper-case spellings to ARPAbet phonemes without stress. The files
ship with the package, gzip-compressed, with CMU's licence beside them (`cmudict_data/`), and
are checked against their sha1 on load. No network.

    from keras_luong.datasets import cmudict
    data = cmudict.load_data(validation_size=2000, seed=0)
    data["train"]["source"], data["train"]["target_in"], data["train"]["target_out"]
    data["test"]["words"], data["test"]["references"]   # several pronunciations per word

A test word is right if the output equals any of its references (word error rate), and its
phoneme errors are counted against the closest one (`keras_luong.evaluation`).
"""

import gzip
import hashlib
import os

import numpy as np

from keras_luong.data.vocabulary import Vocabulary

DATA_DIR = os.path.join(os.path.dirname(__file__), "cmudict_data")
SHA1 = {
    "train": "9f8ce86616fd70613cd1de8d999110110afd48d6",
    "test": "6c0bf34931f3f4dac64348e8d0974c98e3760482",
}


def read_split(name):
    """The `(word, pronunciation)` entries of `"train"` or `"test"`, in file order, after
    checking the file's sha1."""
    if name not in SHA1:
        raise ValueError(
            f"Invalid value for argument name. Expected one of {tuple(SHA1)}. "
            f"Received: name={name!r}"
        )
    with gzip.open(os.path.join(DATA_DIR, f"g014b2b.{name}.gz"), "rb") as f:
        content = f.read()
    digest = hashlib.sha1(content).hexdigest()
    if digest != SHA1[name]:
        raise ValueError(
            f"The vendored CMUdict {name} split is damaged: sha1 {digest}, expected "
            f"{SHA1[name]}. Reinstall keras-luong."
        )
    entries = []
    for line in content.decode("utf-8").splitlines():
        word, pronunciation = line.split("\t")
        entries.append((word, pronunciation))
    return entries


def group(entries):
    """`(words, references)`: each distinct word once, in order of first appearance, with the
    list of its pronunciations."""
    references = {}
    for word, pronunciation in entries:
        references.setdefault(word, []).append(pronunciation)
    return list(references), list(references.values())


def load_data(validation_size=2000, seed=0, max_train_words=None):
    """The split as arrays for `model.fit` and lists for scoring.

    `validation` is `validation_size` words held out from the training file (chosen with
    `seed`, with all their pronunciations); `train` has one example per remaining entry (a
    word with two pronunciations gives two), `max_train_words` keeps only that many of its
    words (for quick runs). `train` has per entry the `words`, `pronunciations`, `source`
    `(N, 22)` letter ids, `target_in` (start + phonemes) and `target_out` (phonemes + end)
    `(N, 21)`; `validation` and `test` have per distinct word the `words`, their
    `references` (lists of pronunciations) and `source`. Also returns the
    `letter_vocabulary` and the `phoneme_vocabulary` (built from the training file).

    Args:
        validation_size: The number of training words held out for validation. Defaults to
            2000.
        seed: The seed of that choice. Defaults to 0.
        max_train_words: If given, keep only this many training words (quick runs).
    """
    train_entries = read_split("train")
    test_entries = read_split("test")
    words, references = group(train_entries)
    rng = np.random.default_rng(seed)
    held_out = set(rng.choice(len(words), validation_size, replace=False).tolist())
    validation = [i in held_out for i in range(len(words))]
    train_words = [w for w, v in zip(words, validation, strict=True) if not v]
    if max_train_words is not None:
        train_words = train_words[:max_train_words]
    keep = set(train_words)
    train_pairs = [(w, p) for w, p in train_entries if w in keep]

    letters = Vocabulary.from_corpus((w for w, _ in train_entries), split="characters")
    phonemes = Vocabulary.from_corpus((p for _, p in train_entries), split="whitespace")
    source_length = max(len(w) for w, _ in train_entries + test_entries)
    target_length = max(len(p.split()) for _, p in train_entries + test_entries) + 1

    def scored_split(split_words, split_references):
        return {
            "words": split_words,
            "references": split_references,
            "source": letters.encode_batch(split_words, source_length),
        }

    data = {
        "train": {
            "words": [w for w, _ in train_pairs],
            "pronunciations": [p for _, p in train_pairs],
            "source": letters.encode_batch([w for w, _ in train_pairs], source_length),
            "target_in": phonemes.encode_batch(
                [p for _, p in train_pairs], target_length, start=True
            ),
            "target_out": phonemes.encode_batch(
                [p for _, p in train_pairs], target_length, end=True
            ),
        },
        "validation": scored_split(
            [w for w, v in zip(words, validation, strict=True) if v],
            [r for r, v in zip(references, validation, strict=True) if v],
        ),
        "test": scored_split(*group(test_entries)),
        "letter_vocabulary": letters,
        "phoneme_vocabulary": phonemes,
        "target_length": target_length,
    }
    return data
